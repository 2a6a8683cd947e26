/* runtime/thread_pool.c — persistent workers with a spin-then-sleep handoff
 * (gufo/ext/experimental/thread_pool.h). */
#include <gufo/ext/experimental/thread_pool.h>

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

/* About 10-50 microseconds of polling before a worker sleeps: long enough
 * to bridge the gap between two sections of one step, short enough that a
 * parked model does not hold a core. */
#define SPIN_ROUNDS 20000

/* About 20 microseconds of arithmetic: below this a parallel section costs
 * more in wake-ups and cache traffic than it saves. */
#define PARALLEL_MIN_WORK 65536u

typedef struct pool_worker {
    gufo_x_pool *pool;
    uint32_t index;
    pthread_t thread;
} pool_worker;

/* Thread t's share of a section's tasks: [first, end), claimed from `next`.
 * One cache line each, so claiming never bounces another thread's line. */
typedef struct pool_range {
    _Alignas(64) atomic_size_t next;
    size_t end;
} pool_range;

/* One parallel section, on the caller's stack while it runs. */
typedef struct pool_job {
    gufo_x_pool_task fn;
    void *ctx;
    size_t n_tasks;
    pool_range *ranges; /* the pool's, one per thread */
    atomic_size_t done_tasks;
} pool_job;

/*
 * Hand-off protocol. The caller publishes the job pointer and bumps
 * `generation` (which wakes sleepers); it takes tasks itself; then it
 * withdraws the pointer and waits until every task is done and no worker is
 * inside the job. A worker enters by incrementing `active` and only then
 * reading the pointer (both sequentially consistent), so a worker that
 * wakes after the withdrawal reads NULL and never touches a finished job,
 * and the caller never waits for a worker that did not take part — which on
 * a busy machine, where a woken thread may not run for milliseconds, is the
 * difference between a useful second thread and a harmful one.
 */
struct gufo_x_pool {
    uint32_t n_threads;
    pool_worker *workers;         /* n_threads - 1 */
    pthread_mutex_t lock;
    pthread_cond_t wake;
    atomic_uint generation;       /* bumped once per section */
    atomic_bool stop;
    _Atomic(pool_job *) job;      /* the open section, or NULL */
    atomic_uint active;           /* workers inside `job` */
    pool_range *ranges;           /* n_threads, reused by every section */
};

static inline void cpu_relax(void)
{
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    __builtin_ia32_pause();
#endif
}

/* Claims tasks until none is left: first the thread's own contiguous share,
 * in order, then what is left of the others' (a thread that was late or
 * slow does not hold the section up). Contiguous shares matter for the
 * matrix products of a decode step: each thread then streams one run of
 * weight rows, which the prefetchers follow, instead of every other tile. */
static void drain(pool_job *job, uint32_t thread, uint32_t n_threads)
{
    for (uint32_t k = 0; k < n_threads; k++) {
        pool_range *r = &job->ranges[(thread + k) % n_threads];
        for (;;) {
            size_t task = atomic_fetch_add_explicit(&r->next, 1, memory_order_relaxed);
            if (task >= r->end)
                break;
            job->fn(job->ctx, task, thread);
            atomic_fetch_add_explicit(&job->done_tasks, 1, memory_order_release);
        }
    }
}

static void *worker_main(void *arg)
{
    pool_worker *self = arg;
    gufo_x_pool *pool = self->pool;
    /* Sections are counted from pool creation (generation 0), not from when
     * this thread first runs: one may already have been posted by then. */
    unsigned seen = 0;
    for (;;) {
        unsigned now = seen;
        for (int spin = 0; spin < SPIN_ROUNDS; spin++) {
            now = atomic_load_explicit(&pool->generation, memory_order_acquire);
            if (now != seen || atomic_load_explicit(&pool->stop, memory_order_relaxed))
                break;
            cpu_relax();
        }
        if (now == seen) {
            pthread_mutex_lock(&pool->lock);
            while ((now = atomic_load_explicit(&pool->generation, memory_order_acquire)) == seen &&
                   !atomic_load_explicit(&pool->stop, memory_order_relaxed))
                pthread_cond_wait(&pool->wake, &pool->lock);
            pthread_mutex_unlock(&pool->lock);
        }
        if (atomic_load_explicit(&pool->stop, memory_order_acquire))
            return NULL;
        seen = now;
        atomic_fetch_add(&pool->active, 1);
        pool_job *job = atomic_load(&pool->job);
        if (job)
            drain(job, self->index, pool->n_threads);
        atomic_fetch_sub(&pool->active, 1);
    }
}

GUFO_EXT_API gufo_status gufo_x_pool_create(uint32_t n_threads, gufo_x_pool **out, gufo_error *err)
{
    if (!out || n_threads == 0)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "thread pool: need at least one thread");
    gufo_x_pool *pool = calloc(1, sizeof *pool);
    if (!pool)
        return gufo_error_set(err, GUFO_E_NO_MEMORY, "thread pool: out of memory");
    pool->n_threads = 1; /* no worker to join until one has started */
    pthread_mutex_init(&pool->lock, NULL);
    pthread_cond_init(&pool->wake, NULL);
    atomic_init(&pool->generation, 0);
    atomic_init(&pool->stop, false);
    atomic_init(&pool->job, NULL);
    atomic_init(&pool->active, 0);
    pool->ranges = aligned_alloc(64, ((size_t)n_threads * sizeof(pool_range) + 63) / 64 * 64);
    if (!pool->ranges) {
        gufo_x_pool_destroy(pool);
        return gufo_error_set(err, GUFO_E_NO_MEMORY, "thread pool: out of memory");
    }
    if (n_threads > 1) {
        pool->workers = calloc(n_threads - 1, sizeof *pool->workers);
        if (!pool->workers) {
            gufo_x_pool_destroy(pool);
            return gufo_error_set(err, GUFO_E_NO_MEMORY, "thread pool: out of memory");
        }
    }
    for (uint32_t i = 0; i + 1 < n_threads; i++) {
        pool_worker *w = &pool->workers[i];
        w->pool = pool;
        w->index = i + 1;
        if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
            pool->n_threads = i + 1; /* join only the i that started */
            gufo_x_pool_destroy(pool);
            return gufo_error_set(err, GUFO_E_INTERNAL, "thread pool: cannot start thread %u of %u", i + 2,
                                  n_threads);
        }
    }
    pool->n_threads = n_threads;
    *out = pool;
    return GUFO_OK;
}

GUFO_EXT_API void gufo_x_pool_destroy(gufo_x_pool *pool)
{
    if (!pool)
        return;
    pthread_mutex_lock(&pool->lock);
    atomic_store_explicit(&pool->stop, true, memory_order_release);
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->lock);
    for (uint32_t i = 0; i + 1 < pool->n_threads; i++)
        pthread_join(pool->workers[i].thread, NULL);
    pthread_cond_destroy(&pool->wake);
    pthread_mutex_destroy(&pool->lock);
    free(pool->workers);
    free(pool->ranges);
    free(pool);
}

GUFO_EXT_API uint32_t gufo_x_pool_threads(const gufo_x_pool *pool)
{
    return pool ? pool->n_threads : 1;
}

GUFO_EXT_API void gufo_x_pool_run(gufo_x_pool *pool, gufo_x_pool_task fn, void *ctx, size_t n_tasks)
{
    if (n_tasks == 0)
        return;
    if (!pool || pool->n_threads == 1 || n_tasks == 1) {
        for (size_t t = 0; t < n_tasks; t++)
            fn(ctx, t, 0);
        return;
    }
    pool_job job = {.fn = fn, .ctx = ctx, .n_tasks = n_tasks, .ranges = pool->ranges};
    size_t share = n_tasks / pool->n_threads, extra = n_tasks % pool->n_threads, first = 0;
    for (uint32_t t = 0; t < pool->n_threads; t++) {
        atomic_init(&pool->ranges[t].next, first);
        first += share + (t < extra);
        pool->ranges[t].end = first;
    }
    atomic_init(&job.done_tasks, 0);
    atomic_store(&pool->job, &job);
    /* The increment under the lock pairs with the sleepers' re-check, so a
     * worker about to sleep cannot miss the section. */
    pthread_mutex_lock(&pool->lock);
    atomic_fetch_add_explicit(&pool->generation, 1, memory_order_release);
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->lock);
    drain(&job, 0, pool->n_threads);
    atomic_store(&pool->job, NULL);
    for (unsigned spin = 0; atomic_load_explicit(&job.done_tasks, memory_order_acquire) < n_tasks ||
                            atomic_load(&pool->active) != 0;
         spin++) {
        if (spin < SPIN_ROUNDS)
            cpu_relax();
        else
            sched_yield();
    }
}

GUFO_EXT_API void gufo_x_pool_run_work(gufo_x_pool *pool, gufo_x_pool_task fn, void *ctx, size_t n_tasks, uint64_t work)
{
    if (work < PARALLEL_MIN_WORK) {
        for (size_t t = 0; t < n_tasks; t++)
            fn(ctx, t, 0);
        return;
    }
    gufo_x_pool_run(pool, fn, ctx, n_tasks);
}

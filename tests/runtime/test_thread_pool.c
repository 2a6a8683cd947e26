/* tests/runtime/test_thread_pool.c — the runtime's CPU thread pool.
 *
 * Every task of a section runs exactly once, on a thread index inside the
 * pool, and the section returns only when all of them are done; sections
 * follow each other without losing or repeating work (the spin-then-sleep
 * handoff is crossed both ways: back-to-back sections and sections after the
 * workers went to sleep); small work runs on the caller alone; a NULL pool or
 * one thread runs everything on the caller; bad arguments are refused.
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep */

#include <gufo/ext/experimental/thread_pool.h>

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gufo/ext/testing.h>

#define MAX_TASKS 1000

typedef struct section {
    atomic_int runs[MAX_TASKS];
    atomic_int bad_thread;
    atomic_int off_caller; /* tasks that ran on a thread other than 0 */
    uint32_t threads;
} section;

static void task(void *ctx, size_t t, uint32_t thread)
{
    section *s = ctx;
    atomic_fetch_add(&s->runs[t], 1);
    if (thread >= s->threads)
        atomic_fetch_add(&s->bad_thread, 1);
    if (thread != 0)
        atomic_fetch_add(&s->off_caller, 1);
    /* A little work, so several threads get a share. */
    volatile double x = 1.0;
    for (int i = 0; i < 2000; i++)
        x = x * 1.0000001 + 1e-9;
}

static void reset(section *s, uint32_t threads)
{
    for (int i = 0; i < MAX_TASKS; i++)
        atomic_init(&s->runs[i], 0);
    atomic_init(&s->bad_thread, 0);
    atomic_init(&s->off_caller, 0);
    s->threads = threads;
}

static int each_ran_once(section *s, size_t n)
{
    int wrong = 0;
    for (size_t i = 0; i < n; i++)
        wrong += atomic_load(&s->runs[i]) != 1;
    return wrong;
}

int main(void)
{
    gufo_error err = {0};
    gufo_x_pool *pool = NULL;
    section *s = malloc(sizeof *s);

    GUFO_CHECK_STATUS(gufo_x_pool_create(0, &pool, &err), GUFO_E_INVALID_ARGUMENT, &err);
    GUFO_CHECK(pool == NULL);
    GUFO_CHECK_STATUS(gufo_x_pool_create(2, NULL, &err), GUFO_E_INVALID_ARGUMENT, &err);
    GUFO_CHECK_EQ_INT(gufo_x_pool_threads(NULL), 1);

    /* NULL pool: everything on the caller. */
    reset(s, 1);
    gufo_x_pool_run(NULL, task, s, 100);
    GUFO_CHECK_EQ_INT(each_ran_once(s, 100), 0);
    GUFO_CHECK_EQ_INT(atomic_load(&s->off_caller), 0);

    GUFO_CHECK_STATUS(gufo_x_pool_create(4, &pool, &err), GUFO_OK, &err);
    if (!pool)
        return GUFO_CHECK_DONE();
    GUFO_CHECK_EQ_INT(gufo_x_pool_threads(pool), 4);

    /* Many sections back to back (workers still spinning), of varied sizes. */
    int total_off_caller = 0;
    for (int round = 0; round < 300; round++) {
        const size_t n = (size_t)(1 + (round * 37) % MAX_TASKS);
        reset(s, 4);
        gufo_x_pool_run(pool, task, s, n);
        GUFO_CHECK_EQ_INT(each_ran_once(s, n), 0);
        GUFO_CHECK_EQ_INT(atomic_load(&s->bad_thread), 0);
        total_off_caller += atomic_load(&s->off_caller);
    }
    /* On a busy machine a worker may not get a core in time for a section,
     * but over 300 sections some work must have left the caller. */
    GUFO_CHECK(total_off_caller > 0);

    /* A section after the workers went to sleep (past the spin window). */
    struct timespec pause = {0, 50 * 1000 * 1000};
    nanosleep(&pause, NULL);
    reset(s, 4);
    gufo_x_pool_run(pool, task, s, MAX_TASKS);
    GUFO_CHECK_EQ_INT(each_ran_once(s, MAX_TASKS), 0);

    /* Zero tasks: nothing happens. Small work: the caller alone. */
    reset(s, 4);
    gufo_x_pool_run(pool, task, s, 0);
    GUFO_CHECK_EQ_INT(each_ran_once(s, 0), 0);
    gufo_x_pool_run_work(pool, task, s, 50, 100);
    GUFO_CHECK_EQ_INT(each_ran_once(s, 50), 0);
    GUFO_CHECK_EQ_INT(atomic_load(&s->off_caller), 0);
    reset(s, 4);
    gufo_x_pool_run_work(pool, task, s, 50, UINT64_MAX);
    GUFO_CHECK_EQ_INT(each_ran_once(s, 50), 0);

    gufo_x_pool_destroy(pool);
    gufo_x_pool_destroy(NULL);

    /* One thread: no worker, the caller runs everything. */
    GUFO_CHECK_STATUS(gufo_x_pool_create(1, &pool, &err), GUFO_OK, &err);
    reset(s, 1);
    gufo_x_pool_run(pool, task, s, 10);
    GUFO_CHECK_EQ_INT(each_ran_once(s, 10), 0);
    GUFO_CHECK_EQ_INT(atomic_load(&s->off_caller), 0);
    gufo_x_pool_destroy(pool);
    free(s);
    return GUFO_CHECK_DONE();
}

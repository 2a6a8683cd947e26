/* host/server/sched/clock.h — the one clock of the scheduler's deadlines.
 *
 * Deadlines, times to first token and step timings are all CLOCK_MONOTONIC
 * nanoseconds; condition variables that wait for a deadline must wait on that
 * same clock (srv_monotonic_cond_init).
 */
#ifndef GUFO_HOST_SERVER_CLOCK_H
#define GUFO_HOST_SERVER_CLOCK_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

/** CLOCK_MONOTONIC now, in nanoseconds. */
uint64_t srv_now_ns(void);

/** `ms` from now on CLOCK_MONOTONIC, for pthread_cond_timedwait on a srv_monotonic_cond_init condition. */
void srv_deadline_after(struct timespec *ts, int ms);

/**
 * A condition variable whose timed waits read CLOCK_MONOTONIC. With the
 * default (CLOCK_REALTIME) a monotonic deadline lies decades in the past, so
 * each timed wait returned at once and every waiting connection thread spun.
 * Returns pthread_cond_init's result.
 */
int srv_monotonic_cond_init(pthread_cond_t *cv);

#endif /* GUFO_HOST_SERVER_CLOCK_H */

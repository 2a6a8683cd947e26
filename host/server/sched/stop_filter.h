/* host/server/sched/stop_filter.h — a request's stop strings, applied to the
 * text a job generates.
 *
 * OpenAI's and Anthropic's `stop`: the output ends right before the first
 * stop string in it, and the stop string itself is never shown. Text arrives
 * a token's worth at a time, so the filter holds back the end of the text
 * that could still grow into a stop string (at most the longest stop string
 * less one byte) until the next token decides it. When one token completes
 * several stop strings, the earliest in the text wins: it is where the
 * output ends.
 *
 * A filter belongs to one job and runs on the scheduler thread only.
 */
#ifndef GUFO_HOST_SERVER_STOP_FILTER_H
#define GUFO_HOST_SERVER_STOP_FILTER_H

#include <stdbool.h>
#include <stddef.h>

typedef struct srv_stop_filter {
    char **stop;               /* copies of the stop strings */
    size_t n_stop;
    size_t max_stop_len;
    char *held;                /* generated text not yet released */
    size_t held_len, held_cap;
} srv_stop_filter;

/** Copies `n_stop` stop strings (none: the filter releases everything at once). False when memory ran out. */
bool srv_stop_filter_init(srv_stop_filter *filter, const char *const *stop, size_t n_stop);

/** Frees the copies and the held text. A zeroed filter is fine too. */
void srv_stop_filter_free(srv_stop_filter *filter);

/** Appends `len` bytes of new text to the held text; false when memory ran out (nothing appended). */
bool srv_stop_filter_push(srv_stop_filter *filter, const char *text, size_t len);

/**
 * Where the held text stands. Returns the index of the stop string that
 * occurs first in it, with `*release` the bytes before it (the output ends
 * there); or -1 with `*release` the bytes that can no longer become part of a
 * stop string. The released bytes are srv_stop_filter_held()'s first
 * `*release`; srv_stop_filter_drop() removes them once they are out.
 */
int srv_stop_filter_scan(const srv_stop_filter *filter, size_t *release);

/** The held text, `*len` bytes (NULL while nothing was held). */
const char *srv_stop_filter_held(const srv_stop_filter *filter, size_t *len);

/** Drops the first `n` held bytes (they were released); n = all of them clears it. */
void srv_stop_filter_drop(srv_stop_filter *filter, size_t n);

#endif /* GUFO_HOST_SERVER_STOP_FILTER_H */

/* host/server/sched/stop_filter.c — see server/sched/stop_filter.h. */
#include "server/sched/stop_filter.h"

#include <stdlib.h>
#include <string.h>

bool srv_stop_filter_init(srv_stop_filter *f, const char *const *stop, size_t n_stop)
{
    memset(f, 0, sizeof *f);
    if (n_stop == 0)
        return true;
    f->stop = calloc(n_stop, sizeof *f->stop);
    if (!f->stop)
        return false;
    for (size_t i = 0; i < n_stop; i++) {
        size_t len = strlen(stop[i]);
        f->stop[i] = malloc(len + 1);
        if (!f->stop[i])
            return false; /* the caller frees what was copied */
        memcpy(f->stop[i], stop[i], len + 1);
        f->n_stop = i + 1;
        if (len > f->max_stop_len)
            f->max_stop_len = len;
    }
    return true;
}

void srv_stop_filter_free(srv_stop_filter *f)
{
    for (size_t i = 0; i < f->n_stop; i++)
        free(f->stop[i]);
    free(f->stop);
    free(f->held);
    memset(f, 0, sizeof *f);
}

bool srv_stop_filter_push(srv_stop_filter *f, const char *text, size_t len)
{
    if (f->held_len + len > f->held_cap) {
        size_t cap = f->held_cap ? f->held_cap : 64;
        while (cap < f->held_len + len)
            cap *= 2;
        char *grown = realloc(f->held, cap);
        if (!grown)
            return false;
        f->held = grown;
        f->held_cap = cap;
    }
    memcpy(f->held + f->held_len, text, len);
    f->held_len += len;
    return true;
}

static const char *find_bytes(const char *hay, size_t n, const char *needle, size_t m)
{
    if (m == 0 || m > n)
        return NULL;
    for (size_t i = 0; i + m <= n; i++)
        if (hay[i] == needle[0] && memcmp(hay + i, needle, m) == 0)
            return hay + i;
    return NULL;
}

/* Bytes at the end of the held text that could still grow into a stop string, so must be held back. */
static size_t holdback(const srv_stop_filter *f)
{
    size_t most = f->max_stop_len ? f->max_stop_len - 1 : 0;
    if (most > f->held_len)
        most = f->held_len;
    for (size_t k = most; k > 0; k--) {
        const char *tail = f->held + f->held_len - k;
        for (size_t i = 0; i < f->n_stop; i++)
            if (strlen(f->stop[i]) > k && memcmp(f->stop[i], tail, k) == 0)
                return k;
    }
    return 0;
}

int srv_stop_filter_scan(const srv_stop_filter *f, size_t *release)
{
    const char *first_hit = NULL;
    int index = -1;
    for (size_t i = 0; i < f->n_stop; i++) {
        const char *hit = find_bytes(f->held, f->held_len, f->stop[i], strlen(f->stop[i]));
        if (hit && (!first_hit || hit < first_hit)) {
            first_hit = hit;
            index = (int)i;
        }
    }
    *release = first_hit ? (size_t)(first_hit - f->held) : f->held_len - holdback(f);
    return index;
}

const char *srv_stop_filter_held(const srv_stop_filter *f, size_t *len)
{
    *len = f->held_len;
    return f->held;
}

void srv_stop_filter_drop(srv_stop_filter *f, size_t n)
{
    if (n > 0 && n < f->held_len)
        memmove(f->held, f->held + n, f->held_len - n);
    f->held_len -= n;
}

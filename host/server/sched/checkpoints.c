/* host/server/sched/checkpoints.c — see server/sched/checkpoints.h. */
#include "server/sched/checkpoints.h"

size_t srv_checkpoints_plan(const size_t *hints, size_t n_hints, size_t n_prompt, size_t reused,
                            uint32_t granularity, size_t out[SRV_CHECKPOINTS_MAX])
{
    size_t fallback = n_prompt ? n_prompt - 1 : 0;
    if (n_hints == 0) {
        hints = &fallback;
        n_hints = 1;
    }
    if (n_hints > SRV_CHECKPOINTS_MAX)
        n_hints = SRV_CHECKPOINTS_MAX;
    size_t g = granularity > 1 ? granularity : 1, n = 0;
    for (size_t i = 0; i < n_hints; i++) {
        size_t c = hints[i] / g * g;
        /* At or below `reused` the job starts from that state already (or past it); the whole
         * prompt is no checkpoint: the last prompt token's step produces output, and the
         * retained session at the end serves whatever extends the prompt. */
        if (c <= reused || c >= n_prompt)
            continue;
        /* Insertion into the ascending list, dropping duplicates. */
        size_t at = 0;
        while (at < n && out[at] < c)
            at++;
        if (at < n && out[at] == c)
            continue;
        for (size_t j = n; j > at; j--)
            out[j] = out[j - 1];
        out[at] = c;
        n++;
    }
    return n;
}

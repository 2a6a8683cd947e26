/* qwen35/mtp_history.c — the last trunk rows of a sequence, kept for the MTP block (mtp_history.h). */
#include "mtp_history.h"

#include <stdlib.h>
#include <string.h>

gufo_status qwen35_mtp_history_init(qwen35_mtp_history *h, uint32_t n_embd, gufo_error *err)
{
    memset(h, 0, sizeof *h);
    h->n_embd = n_embd;
    h->hidden = malloc((size_t)QWEN35_MTP_HISTORY_ROWS * n_embd * sizeof(float));
    if (!h->hidden)
        return gufo_error_set(err, GUFO_E_NO_MEMORY, "qwen35: no memory for %u rows of MTP input",
                              QWEN35_MTP_HISTORY_ROWS);
    return GUFO_OK;
}

void qwen35_mtp_history_free(qwen35_mtp_history *h)
{
    free(h->hidden);
    memset(h, 0, sizeof *h);
}

uint64_t qwen35_mtp_history_bytes(uint32_t n_embd)
{
    return (uint64_t)QWEN35_MTP_HISTORY_ROWS * n_embd * sizeof(float);
}

void qwen35_mtp_history_clear(qwen35_mtp_history *h)
{
    h->n = 0;
}

void qwen35_mtp_history_drop_oldest(qwen35_mtp_history *h, uint32_t n)
{
    if (n >= h->n) {
        h->n = 0;
        return;
    }
    const size_t D = h->n_embd;
    memmove(h->hidden, h->hidden + n * D, (size_t)(h->n - n) * D * sizeof(float));
    memmove(h->next, h->next + n, (size_t)(h->n - n) * sizeof h->next[0]);
    h->n -= n;
}

void qwen35_mtp_history_push(qwen35_mtp_history *h, const int32_t *tokens, const float *hidden, uint32_t n)
{
    const size_t D = h->n_embd;
    uint32_t first = 0;
    if (n > QWEN35_MTP_HISTORY_ROWS) {
        /* Only the newest rows stay, and the kept rows' predecessor goes too. */
        first = n - QWEN35_MTP_HISTORY_ROWS;
        h->n = 0;
    }
    for (uint32_t r = first; r < n; r++) {
        if (h->n > 0)
            h->next[h->n - 1] = tokens[r];
        if (h->n == QWEN35_MTP_HISTORY_ROWS)
            qwen35_mtp_history_drop_oldest(h, 1);
        memcpy(h->hidden + h->n * D, hidden + r * D, D * sizeof(float));
        h->next[h->n] = -1;
        h->n++;
    }
}

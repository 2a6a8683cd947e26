/* qwen35/mtp_history.h — the last trunk rows of a sequence, kept for the MTP block.
 *
 * The MTP block drafts from pairs (trunk output hidden at position p, token
 * at p + 1) (forward.h, qwen35_mtp_forward). The trunk's steps (prefill,
 * decode, verify) produce the hiddens; the token that completes a pair is
 * the one the next step consumes, and for the newest row it is only known
 * when a draft is asked for (the draft's `last_token`). This history holds
 * the newest rows whose pairs the MTP block has not seen yet: a draft feeds
 * them to the MTP block's cache in one pass and keeps only the newest.
 *
 * It is bounded (QWEN35_MTP_HISTORY_ROWS): plain decoding pushes a row per
 * step and nobody drains it, so the oldest rows fall out. A row lost this way
 * only leaves a gap in what the MTP block's attention sees; it changes drafts,
 * never the target's output.
 */
#ifndef QWEN35_MTP_HISTORY_H
#define QWEN35_MTP_HISTORY_H

#include <stdint.h>

#include <gufo/ext/api.h>

/* Most tokens one MTP draft proposes (a verify checks one more row than this). */
#define QWEN35_MAX_DRAFT 8u
/* Rows between two drafts: the newest row of the last draft, the last_token
 * row and the accepted drafts' rows of a verify. */
#define QWEN35_MTP_HISTORY_ROWS (QWEN35_MAX_DRAFT + 2u)

typedef struct qwen35_mtp_history {
    uint32_t n_embd;
    uint32_t n;                                 /* rows held, oldest first */
    float *hidden;                              /* [QWEN35_MTP_HISTORY_ROWS][n_embd] trunk outputs */
    int32_t next[QWEN35_MTP_HISTORY_ROWS];      /* the token after each row; the newest row's is not known yet */
} qwen35_mtp_history;

/** An empty history for rows of `n_embd` floats. GUFO_E_NO_MEMORY. */
gufo_status qwen35_mtp_history_init(qwen35_mtp_history *h, uint32_t n_embd, gufo_error *err);
void qwen35_mtp_history_free(qwen35_mtp_history *h);
/** Bytes it holds (what a session charges for it). */
uint64_t qwen35_mtp_history_bytes(uint32_t n_embd);

/** Forgets every row: the sequence's history changed in a way the rows no longer follow (restore, truncate). */
void qwen35_mtp_history_clear(qwen35_mtp_history *h);

/**
 * Appends `n` trunk rows: row r consumed `tokens[r]` (which completes the pair
 * of the row before it) and produced `hidden[r]` (n_embd floats). Only the
 * newest QWEN35_MTP_HISTORY_ROWS rows stay.
 */
void qwen35_mtp_history_push(qwen35_mtp_history *h, const int32_t *tokens, const float *hidden, uint32_t n);

/** Drops the `n` oldest rows (their pairs are now in the MTP block's cache). */
void qwen35_mtp_history_drop_oldest(qwen35_mtp_history *h, uint32_t n);

#endif /* QWEN35_MTP_HISTORY_H */

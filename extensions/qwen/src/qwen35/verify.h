/* qwen35/verify.h — speculative verification: keeping a prefix of verified rows.
 *
 * qwen35_verify() (forward.h) runs k rows of a sequence in one pass with the
 * bits of k single decodes and records here the recurrent state before the
 * rows and each row's conv and delta-rule inputs, per Gated DeltaNet block.
 * qwen35_verify_accept() keeps the first `keep` rows: the recurrent state is
 * put back and the kept rows replayed from the log (the recurrent rule only,
 * no matrix product), the caches truncated to them. The result is the bits of
 * a sequence that decoded only those rows, so speculative decoding gives
 * exactly the tokens of plain decoding.
 *
 * A log is sized for `max_rows` rows of one model: per row and GDN block the
 * conv inputs and the normalised q, k, v (2 x conv_dim floats) and g, beta,
 * plus one copy of the recurrent state (27B: 3.9 MiB per row, 150 MiB).
 */
#ifndef QWEN35_VERIFY_H
#define QWEN35_VERIFY_H

#include "state.h"

typedef struct qwen35_engine qwen35_engine;

typedef struct qwen35_verify_log {
    uint32_t max_rows, n_rows, n_past0;
    float *conv0, *delta0;  /* the recurrent state before the rows */
    float *mix, *qkv;       /* per GDN block and row: conv inputs; normalised q, k and v */
    float *g, *beta;        /* per GDN block and row: decay and write strength per value head */
} qwen35_verify_log;

/** A log for up to `max_rows` rows of sequences shaped like `st`. GUFO_E_NO_MEMORY. */
gufo_status qwen35_verify_log_create(const qwen35_hparams *hp, const qwen35_state *st, uint32_t max_rows,
                                     qwen35_verify_log *log, gufo_error *err);
void qwen35_verify_log_free(qwen35_verify_log *log);
/** Bytes such a log holds (what a budget charges for it). */
uint64_t qwen35_verify_log_bytes(const qwen35_hparams *hp, const qwen35_state *st, uint32_t max_rows);

/**
 * Keeps the first `keep` rows of the last qwen35_verify() of `st` into `log`.
 * GUFO_E_INVALID_ARGUMENT when keep exceeds the rows verified or `st` moved
 * since; nothing changes then.
 */
gufo_status qwen35_verify_accept(qwen35_engine *e, qwen35_state *st, const qwen35_verify_log *log, uint32_t keep,
                                 gufo_error *err);

#endif /* QWEN35_VERIFY_H */

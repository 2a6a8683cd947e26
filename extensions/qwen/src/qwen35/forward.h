/* qwen35/forward.h — the qwen35 trunk and its MTP block on the CPU: prefill, decode (batched), verify.
 *
 * Per trunk block (llama.cpp's llama_model_qwen35::graph, transformers'
 * Qwen3_5DecoderLayer):
 *
 *   h = x + mixer(RMSNorm(x) * attn_norm)
 *   x = h + W_down(silu(W_gate n) * W_up n),  n = RMSNorm(h) * post_attention_norm
 *
 * where the mixer is gated full attention (attention.h) or a Gated DeltaNet:
 *
 *   [q k v] = conv+silu(W_qkv n)  (conv.h), z = W_gate n,
 *   beta = sigmoid(W_beta n), g = ssm_a * softplus(W_alpha n + ssm_dt)
 *   q, k L2-normalised (x / sqrt(sum x^2 + 1e-6)), q scaled by 1/sqrt(dk)
 *   o_h = delta rule (delta_rule.h), value head h reading key head h % Hk
 *   mixer = W_out (RMSNorm(o_h) * ssm_norm * silu(z_h))
 *
 * then `output_norm` and the output matrix. A prefill of several rows runs the
 * chunked delta rule; a decode row, and every row of a verify pass, the
 * recurrent one.
 *
 * MTP (llama.cpp's graph_mtp): for a row with trunk output hidden h (after
 * output_norm) and the next token t,
 *   x = eh_proj([RMSNorm(embed(t)) * enorm, RMSNorm(h) * hnorm]),
 * one full-attention block over the MTP block's own cache, then
 * shared_head_norm (or output_norm) and the head (or the output matrix).
 *
 * Matrix products are the runtime's CPU kernels over the pool (float32
 * activations for F32/F16/BF16 weights; int8 activations per block for
 * quantized weights unless `numerics` is GUFO_X_CPU_EXACT).
 */
#ifndef QWEN35_FORWARD_H
#define QWEN35_FORWARD_H

#include "attention.h"
#include "state.h"
#include "verify.h"
#include "weights.h"

struct qwen35_engine {
    const qwen35_hparams *hp;
    const qwen35_weights *w;
    gufo_x_pool *pool;
    gufo_x_cpu_numerics numerics;
    uint32_t max_rows, max_logit_rows, max_positions;
    qwen35_attention_shape attention;
    float inv_freq[QWEN35_MAX_HEAD_DIM / 2];
    /* scratch, rows of max_rows */
    float *x, *n, *y;                 /* residual stream, its norm, a product's output */
    float *mix, *conv_out, *z;        /* Gated DeltaNet: projection, conv output, output gate */
    float *b, *a, *beta, *g, *core;   /* ... beta and decay before/after, delta-rule output */
    float *q_full, *k, *v, *q, *att;  /* attention */
    float *ffn_gate, *ffn_up;
    float *cat;                       /* MTP: [normed embedding | normed hidden] */
    float *hidden;                    /* the last pass's normalised output rows: trunk (MTP input) or MTP */
    float *logits;                    /* [max_logit_rows][vocab] */
    float *attention_scratch, *delta_work, *matmul_scratch;
    size_t attention_scratch_floats, delta_work_floats, matmul_scratch_bytes;
    void *block;
    size_t block_bytes;               /* the one allocation behind the scratch (what a budget charges) */
};

/**
 * Scratch for up to `max_rows` rows per call, logits for up to
 * `max_logit_rows` of them (a vocabulary row is 1 MiB at 248320 tokens, so a
 * prefill keeps only its last row's) and caches of up to `max_positions`
 * positions. GUFO_E_NO_MEMORY.
 */
gufo_status qwen35_engine_init(qwen35_engine *e, const qwen35_hparams *hp, const qwen35_weights *w, gufo_x_pool *pool,
                               uint32_t max_rows, uint32_t max_logit_rows, uint32_t max_positions, gufo_error *err);
void qwen35_engine_free(qwen35_engine *e);

/**
 * Runs `n` tokens of `st` at positions st->n_past, st->n_past + 1, ... and
 * advances it. Logits go to e->logits: every row's when `all_logits`, else the
 * last row's in row 0. e->hidden holds every row's normalised output (the
 * MTP block's input). GUFO_E_UNSUPPORTED for an MTP-only file (weights.h).
 * GUFO_E_INVALID_ARGUMENT (token out of the vocabulary,
 * more rows than the scratch, all logits of more than max_logit_rows rows,
 * past the caches' capacity) before any change;
 * GUFO_E_INTERNAL when a product fails.
 */
gufo_status qwen35_forward(qwen35_engine *e, qwen35_state *st, const int32_t *tokens, uint32_t n, bool all_logits,
                           gufo_error *err);

/**
 * One decode step for `n` different sequences: row r is tokens[r] for
 * states[r] at its next position (one recurrent delta-rule step each), with
 * every weight read once for all rows. Every row's logits go to e->logits (n
 * <= max_logit_rows), e->hidden as in qwen35_forward; each sequence advances
 * by one. A sequence decoded in a batch gets the same bits as decoded alone.
 * GUFO_E_INVALID_ARGUMENT also when a sequence appears twice.
 */
gufo_status qwen35_decode_batch(qwen35_engine *e, qwen35_state *const *states, const int32_t *tokens, uint32_t n,
                                gufo_error *err);

/**
 * Runs `n` rows of `st` like qwen35_forward(..., all_logits = true), except
 * that the delta rule runs row by row in its recurrent form, so every row's
 * logits are the bits n single decodes would give, and records in `log` what
 * qwen35_verify_accept() needs to keep any prefix of the rows (verify.h).
 */
gufo_status qwen35_verify(qwen35_engine *e, qwen35_state *st, qwen35_verify_log *log, const int32_t *tokens,
                          uint32_t n, gufo_error *err);

/**
 * The MTP block over `n` rows at MTP-cache positions st->mtp_n_past, ...:
 * row r pairs trunk output hidden[r] (n_embd floats, may be e->hidden) with
 * the next token tokens[r]; every row's logits go to e->logits (n <=
 * max_logit_rows) and its output after shared_head_norm to e->hidden (what
 * llama.cpp's graph_mtp hands on as h_nextn: a chained draft step pairs it
 * with the token just drafted). Advances st->mtp_n_past. GUFO_E_UNSUPPORTED
 * when the model has no MTP block.
 *
 * Positions: transformers-style drafting (vLLM's) pairs trunk position p's
 * hidden with token p+1 at MTP position p, which is what a caller gets by
 * starting at mtp_n_past = 0; llama.cpp's driver pairs hidden p-1 with token p
 * at position p and first feeds a row of its pending hidden with token 0.
 * Attention only sees position differences, so the shift alone changes
 * nothing; the extra first row does, and a caller reproducing llama.cpp feeds
 * it too.
 */
gufo_status qwen35_mtp_forward(qwen35_engine *e, qwen35_state *st, const int32_t *tokens, const float *hidden,
                               uint32_t n, gufo_error *err);

#endif /* QWEN35_FORWARD_H */

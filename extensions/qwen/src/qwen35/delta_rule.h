/* qwen35/delta_rule.h — the gated delta rule of one Gated DeltaNet value head, in its two forms.
 *
 * The head keeps a state S of dk x dv floats (row a = key dimension a). For
 * each token t, with q_t and k_t already L2-normalised (q_t also scaled by
 * 1/sqrt(dk)), decay g_t <= 0 and write strength beta_t in (0, 1):
 *
 *     S     <- exp(g_t) S
 *     d_t    = beta_t (v_t - S^T k_t)
 *     S     <- S + k_t d_t^T
 *     o_t    = S^T q_t
 *
 * qwen35_delta_recurrent() runs exactly this, one token at a time (decode).
 * qwen35_delta_chunked() computes the same function over a run of tokens in
 * chunks of QWEN35_DELTA_CHUNK (prefill), as transformers'
 * torch_chunk_gated_delta_rule and llama.cpp's chunked graph do: within a
 * chunk, with G the cumulative sum of g,
 *
 *     (I + L) [U | W] = [beta v | beta exp(G) k],  L_ij = beta_i (k_i . k_j) exp(G_i - G_j), j < i
 *     V'   = U - W S
 *     o_i  = exp(G_i) q_i^T S + sum_{j <= i} (q_i . k_j) exp(G_i - G_j) V'_j
 *     S   <- exp(G_last) S + sum_t exp(G_last - G_t) k_t V'_t^T
 *
 * (the unit lower-triangular system solved by forward substitution). The two
 * agree up to float rounding (the tests state the bound); a last chunk
 * shorter than QWEN35_DELTA_CHUNK is the same as padding it with g = 0,
 * beta = 0 tokens, which is what the references do.
 */
#ifndef QWEN35_DELTA_RULE_H
#define QWEN35_DELTA_RULE_H

#include <stddef.h>
#include <stdint.h>

#define QWEN35_DELTA_CHUNK 64u

/** One token: updates S (dk x dv) and writes o (dv floats). */
void qwen35_delta_recurrent(uint32_t dk, uint32_t dv, float *S, const float *q, const float *k, const float *v,
                            float g, float beta, float *o);

/** Floats of `work` qwen35_delta_chunked() needs. */
size_t qwen35_delta_work_floats(uint32_t dk, uint32_t dv);

/**
 * `n` tokens: token t's q at q + t * qk_stride (k likewise), v at
 * v + t * v_stride, g and beta at g[t * gb_stride], beta[t * gb_stride],
 * output at o + t * o_stride. Updates S to the state after the last token.
 */
void qwen35_delta_chunked(uint32_t dk, uint32_t dv, float *S, uint32_t n, const float *q, const float *k,
                          size_t qk_stride, const float *v, size_t v_stride, const float *g, const float *beta,
                          size_t gb_stride, float *o, size_t o_stride, float *work);

#endif /* QWEN35_DELTA_RULE_H */

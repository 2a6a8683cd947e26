/* qwen35/verify.c — the verify log and keeping a prefix of verified rows (verify.h). */
#include "verify.h"

#include <stdlib.h>
#include <string.h>

#include <gufo/ext/experimental/thread_pool.h>

#include "delta_rule.h"
#include "forward.h"

/* Bytes of each part of a log (verify.h), the one place their sizes are said. */
typedef struct log_sizes {
    size_t conv0, delta0, mix, qkv, g, beta;
} log_sizes;

static log_sizes sizes_of(const qwen35_hparams *hp, const qwen35_state *st, uint32_t max_rows)
{
    const size_t gdn = st->n_gdn ? st->n_gdn : 1, conv = qwen35_gdn_conv_dim(hp);
    return (log_sizes){
        .conv0 = gdn * st->conv_floats * sizeof(float),
        .delta0 = gdn * st->delta_floats * sizeof(float),
        .mix = gdn * max_rows * conv * sizeof(float),
        .qkv = gdn * max_rows * conv * sizeof(float),
        .g = gdn * max_rows * hp->gdn_v_heads * sizeof(float),
        .beta = gdn * max_rows * hp->gdn_v_heads * sizeof(float),
    };
}

uint64_t qwen35_verify_log_bytes(const qwen35_hparams *hp, const qwen35_state *st, uint32_t max_rows)
{
    const log_sizes z = sizes_of(hp, st, max_rows);
    return (uint64_t)z.conv0 + z.delta0 + z.mix + z.qkv + z.g + z.beta;
}

gufo_status qwen35_verify_log_create(const qwen35_hparams *hp, const qwen35_state *st, uint32_t max_rows,
                                     qwen35_verify_log *log, gufo_error *err)
{
    memset(log, 0, sizeof *log);
    log->max_rows = max_rows;
    const log_sizes z = sizes_of(hp, st, max_rows);
    log->conv0 = malloc(z.conv0);
    log->delta0 = malloc(z.delta0);
    log->mix = malloc(z.mix);
    log->qkv = malloc(z.qkv);
    log->g = malloc(z.g);
    log->beta = malloc(z.beta);
    if (!log->conv0 || !log->delta0 || !log->mix || !log->qkv || !log->g || !log->beta) {
        qwen35_verify_log_free(log);
        return gufo_error_set(err, GUFO_E_NO_MEMORY, "qwen35: no memory for a verify log of %u rows", max_rows);
    }
    return GUFO_OK;
}

void qwen35_verify_log_free(qwen35_verify_log *log)
{
    free(log->conv0);
    free(log->delta0);
    free(log->mix);
    free(log->qkv);
    free(log->g);
    free(log->beta);
    memset(log, 0, sizeof *log);
}

typedef struct replay_job {
    const qwen35_engine *e;
    qwen35_state *st;
    const qwen35_verify_log *log;
    uint32_t keep;
} replay_job;

/* One (GDN block, value head): the delta rule over the kept rows, from the logged inputs. */
static void replay_task(void *ctx, size_t task, uint32_t thread)
{
    (void)thread;
    const replay_job *job = ctx;
    const qwen35_hparams *hp = job->e->hp;
    const uint32_t Hv = hp->gdn_v_heads, Hk = hp->gdn_k_heads, dk = hp->gdn_head_dim;
    const size_t gdn = task / Hv, h = task % Hv, conv = qwen35_gdn_conv_dim(hp), kh = h % Hk;
    const float *rows = job->log->qkv + gdn * job->log->max_rows * conv;
    const float *g = job->log->g + gdn * job->log->max_rows * Hv, *beta = job->log->beta + gdn * job->log->max_rows * Hv;
    float *S = qwen35_state_delta(job->st, (uint32_t)gdn) + h * (size_t)dk * dk;
    float out[QWEN35_MAX_HEAD_DIM];
    for (uint32_t t = 0; t < job->keep; t++) {
        const float *q = rows + t * conv + kh * dk, *k = q + (size_t)Hk * dk;
        const float *v = rows + t * conv + 2 * (size_t)Hk * dk + h * dk;
        qwen35_delta_recurrent(dk, dk, S, q, k, v, g[t * Hv + h], beta[t * Hv + h], out);
    }
}

gufo_status qwen35_verify_accept(qwen35_engine *e, qwen35_state *st, const qwen35_verify_log *log, uint32_t keep,
                                 gufo_error *err)
{
    const qwen35_hparams *hp = e->hp;
    if (keep > log->n_rows || st->n_past != log->n_past0 + log->n_rows)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT,
                              "qwen35: keep %u of %u verified rows (the sequence is at %u, the log starts at %u)", keep,
                              log->n_rows, st->n_past, log->n_past0);
    if (keep == log->n_rows)
        return GUFO_OK;
    memcpy(st->conv, log->conv0, st->n_gdn * st->conv_floats * sizeof(float));
    memcpy(st->delta, log->delta0, st->n_gdn * st->delta_floats * sizeof(float));
    const uint32_t channels = qwen35_gdn_conv_dim(hp), hist = hp->conv_kernel - 1;
    for (uint32_t gdn = 0; gdn < st->n_gdn; gdn++) {
        /* the conv state: the last kernel-1 inputs of (old state, kept rows) */
        float *cs = qwen35_state_conv(st, gdn);
        const float *mix = log->mix + (size_t)gdn * log->max_rows * channels;
        for (uint32_t t = 0; t < keep; t++) {
            memmove(cs, cs + channels, (size_t)(hist - 1) * channels * sizeof(float));
            memcpy(cs + (size_t)(hist - 1) * channels, mix + (size_t)t * channels, channels * sizeof(float));
        }
    }
    replay_job job = {.e = e, .st = st, .log = log, .keep = keep};
    gufo_x_pool_run_work(e->pool, replay_task, &job, (size_t)st->n_gdn * hp->gdn_v_heads,
                         (uint64_t)st->n_gdn * hp->gdn_v_heads * keep * 4ull * hp->gdn_head_dim * hp->gdn_head_dim);
    st->n_past = log->n_past0 + keep;
    st->kv_written = st->n_past;
    return GUFO_OK;
}


/* forward_cpu.c — the Qwen3 layers over a set of rows (forward_cpu.h). */
#include "forward_cpu.h"

#include <math.h>
#include <string.h>

#include "kernels.h"
#include "matmul.h"

/* ---- scratch ------------------------------------------------------------ */

gufo_status qwen_engine_init(qwen_engine *e, const qwen_hparams *hp, const qwen_weights *w, qwen_pool *pool,
                             gufo_memory *memory, uint32_t max_rows, uint32_t max_out, uint32_t max_positions,
                             gufo_error *err)
{
    memset(e, 0, sizeof *e);
    e->hp = hp;
    e->w = w;
    e->pool = pool;
    e->max_rows = max_rows;
    e->max_out = max_out;
    e->max_positions = max_positions;

    const uint64_t rows = max_rows, q_width = (uint64_t)hp->n_head * hp->head_dim_k;
    const uint64_t kw = (uint64_t)hp->n_head_kv * hp->head_dim_k, vw = (uint64_t)hp->n_head_kv * hp->head_dim_v;
    const uint64_t att_width = (uint64_t)hp->n_head * hp->head_dim_v;
    /* Widest input of any matrix: hidden, FFN or attention output. */
    uint64_t widest = hp->n_embd > hp->n_ff ? hp->n_embd : hp->n_ff;
    widest = widest > att_width ? widest : att_width;
    const uint64_t tile_floats = (QWEN_TILE_ROWS * widest + 15) / 16 * 16;
    /* Each buffer starts on a 64-byte line so threads writing neighbouring
     * buffers never share one. */
    const uint64_t sizes[] = {
        hp->head_dim_k / 2,                                  /* inv_freq */
        rows * hp->n_embd, rows * hp->n_embd,                /* x, h */
        rows * q_width, rows * kw, rows * vw, rows * att_width, /* q, k, v, att */
        rows * hp->n_ff, rows * hp->n_ff,                    /* gate, up */
        (uint64_t)max_out * hp->n_embd,                      /* normed */
        (uint64_t)max_out * hp->n_vocab,                     /* logits */
        (uint64_t)qwen_pool_threads(pool) * max_positions,   /* scores */
        (uint64_t)qwen_pool_threads(pool) * tile_floats,     /* tiles */
    };
    float **slots[] = {&e->inv_freq, &e->x,      &e->h,      &e->q,      &e->k,           &e->v,
                       &e->att,      &e->gate,   &e->up,     &e->normed, &e->logits, &e->scores,
                       &e->tiles.tiles};
    uint64_t total = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        total += (sizes[i] + 15) / 16 * 16;
    if (total * sizeof(float) > SIZE_MAX)
        return gufo_error_set(err, GUFO_E_NO_MEMORY, "qwen scratch of %llu floats does not fit in memory",
                              (unsigned long long)total);
    gufo_status st = gufo_memory_alloc(memory, GUFO_MEMORY_HOST, (size_t)(total * sizeof(float)), 64, "scratch",
                                       &e->block, err);
    if (st != GUFO_OK)
        return gufo_error_prefix(err, st, "qwen scratch for %u rows", max_rows);
    e->tiles.per_thread = (size_t)tile_floats;
    float *cursor = e->block;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        *slots[i] = cursor;
        cursor += (sizes[i] + 15) / 16 * 16;
    }
    /* transformers computes base ** (2i / d) in float32 and inverts it;
     * doing the same keeps the angles on the reference's rounding. */
    for (uint32_t i = 0; i < hp->head_dim_k / 2; i++)
        e->inv_freq[i] = 1.0f / powf(hp->rope_freq_base, (float)(2 * i) / (float)hp->head_dim_k);
    return GUFO_OK;
}

void qwen_engine_release(gufo_memory *memory, qwen_engine *e)
{
    gufo_memory_free(memory, e->block);
    memset(e, 0, sizeof *e);
}

/* ---- element-wise pieces ------------------------------------------------ */

/* y = x / sqrt(mean(x^2) + eps) * weight; the sum in double so the only
 * rounding that matters is the final float, as in an fp32 reference. */
static void rms_norm(const float *x, const float *weight, uint32_t n, float eps, float *y)
{
    double sum = 0.0;
    for (uint32_t i = 0; i < n; i++)
        sum += (double)x[i] * x[i];
    const float scale = (float)(1.0 / sqrt(sum / n + eps));
    for (uint32_t i = 0; i < n; i++)
        y[i] = weight[i] * (x[i] * scale);
}

/* NEOX rotation: element i pairs with i + d/2. */
static void rope(float *v, uint32_t d, uint32_t pos, const float *inv_freq)
{
    const uint32_t half = d / 2;
    for (uint32_t i = 0; i < half; i++) {
        const float angle = (float)pos * inv_freq[i];
        const float c = cosf(angle), s = sinf(angle);
        const float a = v[i], b = v[i + half];
        v[i] = a * c - b * s;
        v[i + half] = a * s + b * c;
    }
}

/* ---- parallel sections -------------------------------------------------- */

typedef struct layer_job {
    qwen_engine *e;
    const qwen_row *rows;
    uint32_t layer;
} layer_job;

/* Per row: QK norms, RoPE, and the row's keys/values into its cache. */
static void qk_task(void *ctx, size_t r, uint32_t thread)
{
    (void)thread;
    const layer_job *job = ctx;
    const qwen_engine *e = job->e;
    const qwen_hparams *hp = e->hp;
    const qwen_layer *L = &e->w->layers[job->layer];
    const uint32_t dk = hp->head_dim_k, kw = hp->n_head_kv * dk, vw = hp->n_head_kv * hp->head_dim_v;
    const qwen_row *row = &job->rows[r];
    float *q = e->q + r * (size_t)hp->n_head * dk;
    float *k = e->k + r * (size_t)kw;
    for (uint32_t h = 0; h < hp->n_head; h++) {
        rms_norm(q + (size_t)h * dk, L->q_norm, dk, hp->rms_eps, q + (size_t)h * dk);
        rope(q + (size_t)h * dk, dk, row->pos, e->inv_freq);
    }
    float *kcache = qwen_kv_keys(row->kv, job->layer) + (size_t)row->pos * kw;
    float *vcache = qwen_kv_values(row->kv, job->layer) + (size_t)row->pos * vw;
    for (uint32_t h = 0; h < hp->n_head_kv; h++) {
        rms_norm(k + (size_t)h * dk, L->k_norm, dk, hp->rms_eps, kcache + (size_t)h * dk);
        rope(kcache + (size_t)h * dk, dk, row->pos, e->inv_freq);
    }
    memcpy(vcache, e->v + r * (size_t)vw, (size_t)vw * sizeof(float));
}

/* One (row, head): causal softmax attention over the row's history. */
static void attention_task(void *ctx, size_t task, uint32_t thread)
{
    const layer_job *job = ctx;
    const qwen_engine *e = job->e;
    const qwen_hparams *hp = e->hp;
    const size_t r = task / hp->n_head;
    const uint32_t h = (uint32_t)(task % hp->n_head);
    const uint32_t kvh = h / (hp->n_head / hp->n_head_kv);
    const uint32_t dk = hp->head_dim_k, dv = hp->head_dim_v;
    const uint32_t kw = hp->n_head_kv * dk, vw = hp->n_head_kv * dv;
    const qwen_row *row = &job->rows[r];
    const float *q = e->q + (r * hp->n_head + h) * (size_t)dk;
    const float *keys = qwen_kv_keys(row->kv, job->layer) + (size_t)kvh * dk;
    const float *values = qwen_kv_values(row->kv, job->layer) + (size_t)kvh * dv;
    float *scores = e->scores + (size_t)thread * e->max_positions;
    float *out = e->att + (r * hp->n_head + h) * (size_t)dv;

    const uint32_t n = row->pos + 1;
    const float scale = 1.0f / sqrtf((float)dk);
    float max = -INFINITY;
    for (uint32_t j = 0; j < n; j++) {
        scores[j] = qwen_dot(q, keys + (size_t)j * kw, dk) * scale;
        if (scores[j] > max)
            max = scores[j];
    }
    double sum = 0.0;
    for (uint32_t j = 0; j < n; j++) {
        scores[j] = expf(scores[j] - max);
        sum += scores[j];
    }
    const float inv = (float)(1.0 / sum);
    memset(out, 0, (size_t)dv * sizeof(float));
    for (uint32_t j = 0; j < n; j++)
        qwen_axpy(scores[j] * inv, values + (size_t)j * vw, out, dv);
}

/* ---- the pass ------------------------------------------------------------ */

static gufo_status run_layer(qwen_engine *e, const qwen_row *rows, size_t n, uint32_t il)
{
    const qwen_hparams *hp = e->hp;
    const qwen_layer *L = &e->w->layers[il];
    const uint32_t D = hp->n_embd, F = hp->n_ff;
    gufo_status st;

    for (size_t r = 0; r < n; r++)
        rms_norm(e->x + r * D, L->attn_norm, D, hp->rms_eps, e->h + r * D);
    const qwen_matrix *qkv[3] = {&L->wq, &L->wk, &L->wv};
    float *const qkv_out[3] = {e->q, e->k, e->v};
    if ((st = qwen_matmul_multi(e->pool, &e->tiles, qkv, 3, e->h, n, qkv_out)) != GUFO_OK)
        return st;
    layer_job job = {.e = e, .rows = rows, .layer = il};
    uint64_t span = 0; /* positions attended over all rows */
    for (size_t r = 0; r < n; r++)
        span += rows[r].pos + 1;
    qwen_pool_run_work(e->pool, qk_task, &job, n, (uint64_t)n * (hp->n_head + hp->n_head_kv) * hp->head_dim_k * 8);
    qwen_pool_run_work(e->pool, attention_task, &job, n * hp->n_head,
                       span * hp->n_head * ((uint64_t)hp->head_dim_k + hp->head_dim_v));
    if ((st = qwen_matmul(e->pool, &e->tiles, &L->wo, e->att, n, e->h)) != GUFO_OK)
        return st;
    for (size_t i = 0; i < n * D; i++)
        e->x[i] += e->h[i];

    for (size_t r = 0; r < n; r++)
        rms_norm(e->x + r * D, L->ffn_norm, D, hp->rms_eps, e->h + r * D);
    const qwen_matrix *gate_up[2] = {&L->gate, &L->up};
    float *const gate_up_out[2] = {e->gate, e->up};
    if ((st = qwen_matmul_multi(e->pool, &e->tiles, gate_up, 2, e->h, n, gate_up_out)) != GUFO_OK)
        return st;
    for (size_t i = 0; i < n * F; i++) {
        const float g = e->gate[i];
        e->gate[i] = g / (1.0f + expf(-g)) * e->up[i];
    }
    if ((st = qwen_matmul(e->pool, &e->tiles, &L->down, e->gate, n, e->h)) != GUFO_OK)
        return st;
    for (size_t i = 0; i < n * D; i++)
        e->x[i] += e->h[i];
    return GUFO_OK;
}

gufo_status qwen_forward(qwen_engine *e, const qwen_row *rows, size_t n_rows, const uint32_t *out_rows, size_t n_out,
                         const gufo_cancel *cancel, gufo_error *err)
{
    const qwen_hparams *hp = e->hp;
    const uint32_t D = hp->n_embd;
    if (n_rows == 0 || n_rows > e->max_rows || n_out > e->max_out)
        return gufo_error_set(err, GUFO_E_INTERNAL, "qwen forward: %zu rows / %zu outputs exceed the scratch (%u / %u)",
                              n_rows, n_out, e->max_rows, e->max_out);
    const qwen_matrix *embd = &e->w->token_embd;
    for (size_t r = 0; r < n_rows; r++) {
        if (rows[r].pos >= rows[r].kv->capacity || rows[r].pos >= e->max_positions)
            return gufo_error_set(err, GUFO_E_INTERNAL, "qwen forward: position %u has no cache slot", rows[r].pos);
        const uint8_t *src = (const uint8_t *)embd->data + (size_t)rows[r].token * embd->row_bytes;
        gufo_status st = qwen_decode_row(embd->type, src, e->x + r * D, D);
        if (st != GUFO_OK)
            return gufo_error_set(err, GUFO_E_INTERNAL, "qwen forward: token_embd.weight row %d: %s",
                                  (int)rows[r].token, gufo_status_str(st));
    }
    for (uint32_t il = 0; il < hp->n_layer; il++) {
        gufo_status st = gufo_cancel_check(cancel, err);
        if (st != GUFO_OK)
            return st;
        if ((st = run_layer(e, rows, n_rows, il)) != GUFO_OK)
            return gufo_error_set(err, st, "qwen forward: layer %u: matrix product failed", il);
    }
    if (n_out == 0)
        return GUFO_OK;
    for (size_t i = 0; i < n_out; i++)
        rms_norm(e->x + (size_t)out_rows[i] * D, e->w->output_norm, D, hp->rms_eps, e->normed + i * D);
    gufo_status st = qwen_matmul(e->pool, &e->tiles, &e->w->output, e->normed, n_out, e->logits);
    if (st != GUFO_OK)
        return gufo_error_set(err, st, "qwen forward: output matrix product failed");
    return GUFO_OK;
}

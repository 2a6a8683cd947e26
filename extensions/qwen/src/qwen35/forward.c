/* qwen35/forward.c — trunk and MTP passes over one sequence's rows (forward.h). */
#include "forward.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "conv.h"
#include "delta_rule.h"

/* ---- scratch ---------------------------------------------------------------- */

static uint64_t max3(uint64_t a, uint64_t b, uint64_t c)
{
    const uint64_t ab = a > b ? a : b;
    return ab > c ? ab : c;
}

gufo_status qwen35_engine_init(qwen35_engine *e, const qwen35_hparams *hp, const qwen35_weights *w, gufo_x_pool *pool,
                               uint32_t max_rows, uint32_t max_logit_rows, uint32_t max_positions, gufo_error *err)
{
    memset(e, 0, sizeof *e);
    e->hp = hp;
    e->w = w;
    e->pool = pool;
    e->numerics = GUFO_X_CPU_Q8;
    e->max_rows = max_rows;
    e->max_logit_rows = max_logit_rows < max_rows ? max_logit_rows : max_rows;
    if (e->max_logit_rows == 0)
        e->max_logit_rows = 1;
    e->max_positions = max_positions;
    qwen35_rope_inv_freq(hp->rope_freq_base, hp->n_rot, e->inv_freq);
    e->attention = (qwen35_attention_shape){.n_head = hp->n_head, .n_head_kv = hp->n_head_kv,
                                            .head_dim = hp->head_dim, .n_rot = hp->n_rot, .rms_eps = hp->rms_eps,
                                            .inv_freq = e->inv_freq};
    const uint64_t R = max_rows, D = hp->n_embd, conv = qwen35_gdn_conv_dim(hp), Vd = hp->gdn_inner;
    const uint64_t Hv = hp->gdn_v_heads, qw = (uint64_t)hp->n_head * hp->head_dim;
    const uint64_t kvw = (uint64_t)hp->n_head_kv * hp->head_dim;
    const uint32_t threads = gufo_x_pool_threads(pool);
    const uint64_t widest = max3(max3(D, hp->n_ff, Vd), qw, 2 * D);
    e->attention_scratch_floats = qwen35_attention_scratch_floats(&e->attention, max_positions);
    e->delta_work_floats = (qwen35_delta_work_floats(hp->gdn_head_dim, hp->gdn_head_dim) + 15) / 16 * 16;
    e->matmul_scratch_bytes = gufo_x_cpu_matmul_scratch_bytes(widest, R, threads);
    const uint64_t sizes[] = {
        R * D, R * D, R * D,                      /* x, n, y */
        R * conv, R * conv, R * Vd,               /* mix, conv_out, z */
        R * Hv, R * Hv, R * Hv, R * Hv, R * Vd,   /* b, a, beta, g, core */
        R * 2 * qw, R * kvw, R * kvw, R * qw, R * qw, /* q_full, k, v, q, att */
        R * hp->n_ff, R * hp->n_ff,               /* ffn_gate, ffn_up */
        R * 2 * D, R * D,                         /* cat, hidden */
        (uint64_t)e->max_logit_rows * hp->n_vocab, /* logits */
        threads * (uint64_t)e->attention_scratch_floats,
        threads * (uint64_t)e->delta_work_floats,
        (e->matmul_scratch_bytes + 3) / 4,
    };
    float **slots[] = {&e->x,      &e->n,      &e->y,     &e->mix,    &e->conv_out, &e->z,
                       &e->b,      &e->a,      &e->beta,  &e->g,      &e->core,     &e->q_full,
                       &e->k,      &e->v,      &e->q,     &e->att,    &e->ffn_gate, &e->ffn_up,
                       &e->cat,    &e->hidden, &e->logits, &e->attention_scratch, &e->delta_work,
                       &e->matmul_scratch};
    _Static_assert(sizeof sizes / sizeof sizes[0] == sizeof slots / sizeof slots[0], "one size per buffer");
    uint64_t total = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        total += (sizes[i] + 15) / 16 * 16; /* every buffer on its own 64-byte line */
    if (total > SIZE_MAX / sizeof(float) / 2)
        return gufo_error_set(err, GUFO_E_NO_MEMORY, "qwen35 scratch of %llu floats does not fit in memory",
                              (unsigned long long)total);
    e->block = aligned_alloc(64, (size_t)total * sizeof(float));
    if (!e->block)
        return gufo_error_set(err, GUFO_E_NO_MEMORY, "qwen35: no memory for the scratch of %u rows (%llu MiB)",
                              max_rows, (unsigned long long)(total * sizeof(float) >> 20));
    e->block_bytes = (size_t)total * sizeof(float);
    float *cursor = e->block;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        *slots[i] = cursor;
        cursor += (sizes[i] + 15) / 16 * 16;
    }
    return GUFO_OK;
}

void qwen35_engine_free(qwen35_engine *e)
{
    free(e->block);
    memset(e, 0, sizeof *e);
}

static gufo_status matmul(qwen35_engine *e, const qwen35_matrix *const *w, size_t n_w, const float *x, uint32_t n,
                          float *const *y)
{
    return gufo_x_cpu_matmul(e->pool, w, n_w, x, n, y, e->numerics, e->matmul_scratch, e->matmul_scratch_bytes);
}

static void rms_rows(const float *x, const float *weight, uint32_t n, uint32_t width, float eps, float *y)
{
    for (uint32_t r = 0; r < n; r++)
        gufo_x_cpu_rms_norm(x + (size_t)r * width, weight, width, eps, y + (size_t)r * width);
}

static void add_rows(float *x, const float *y, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] += y[i];
}

/* ---- the rows of a pass ----------------------------------------------------------- */

/* Either the consecutive rows of one sequence (prefill or a single decode),
 * or one row of each of several sequences (a batched decode step). */
typedef struct rows_view {
    uint32_t n;
    bool batch;                  /* row r belongs to states[r]; else every row to states[0] */
    qwen35_state *const *states;
    qwen35_verify_log *log;      /* a verify pass: recurrent rule row by row, inputs recorded */
} rows_view;

static qwen35_state *row_state(const rows_view *v, size_t r)
{
    return v->states[v->batch ? r : 0];
}

/* ---- Gated DeltaNet ------------------------------------------------------------ */

typedef struct gdn_job {
    qwen35_engine *e;
    const qwen35_gdn_weights *g;
    const rows_view *rows;
    uint32_t gdn;
} gdn_job;

#define CONV_CHANNELS_PER_TASK 64u

static void conv_task(void *ctx, size_t task, uint32_t thread)
{
    (void)thread;
    const gdn_job *job = ctx;
    const qwen35_hparams *hp = job->e->hp;
    const uint32_t channels = qwen35_gdn_conv_dim(hp);
    const uint32_t c0 = (uint32_t)task * CONV_CHANNELS_PER_TASK;
    const uint32_t c1 = c0 + CONV_CHANNELS_PER_TASK < channels ? c0 + CONV_CHANNELS_PER_TASK : channels;
    const rows_view *v = job->rows;
    if (!v->batch) {
        qwen35_conv_silu(job->g->conv, channels, hp->conv_kernel, qwen35_state_conv(v->states[0], job->gdn),
                         job->e->mix, channels, job->e->conv_out, channels, v->n, c0, c1);
        return;
    }
    for (uint32_t r = 0; r < v->n; r++)
        qwen35_conv_silu(job->g->conv, channels, hp->conv_kernel, qwen35_state_conv(v->states[r], job->gdn),
                         job->e->mix + (size_t)r * channels, channels, job->e->conv_out + (size_t)r * channels,
                         channels, 1, c0, c1);
}

/* Row r: L2 norms of its q and k heads (q also scaled), beta and g. */
static void gdn_row_task(void *ctx, size_t r, uint32_t thread)
{
    (void)thread;
    const gdn_job *job = ctx;
    const qwen35_engine *e = job->e;
    const qwen35_hparams *hp = e->hp;
    const uint32_t dk = hp->gdn_head_dim, Hk = hp->gdn_k_heads, Hv = hp->gdn_v_heads;
    float *row = e->conv_out + r * (size_t)qwen35_gdn_conv_dim(hp);
    const float q_scale = 1.0f / sqrtf((float)dk);
    for (uint32_t h = 0; h < 2 * Hk; h++) { /* the Hk query heads, then the Hk key heads */
        float *x = row + (size_t)h * dk;
        float sum = 0.0f;
        for (uint32_t i = 0; i < dk; i++)
            sum += x[i] * x[i];
        float inv = 1.0f / sqrtf(sum + 1e-6f);
        if (h < Hk)
            inv *= q_scale;
        for (uint32_t i = 0; i < dk; i++)
            x[i] *= inv;
    }
    for (uint32_t h = 0; h < Hv; h++) {
        const size_t i = r * (size_t)Hv + h;
        e->beta[i] = 1.0f / (1.0f + expf(-e->b[i]));
        const float u = e->a[i] + job->g->dt_bias[h];
        const float softplus = u > 20.0f ? u : log1pf(expf(u)); /* torch's softplus threshold */
        e->g[i] = job->g->a[h] * softplus;
    }
}

/* One value head of one sequence: all rows of a single sequence (task = head),
 * or one row of a batch (task = row * Hv + head). */
static void delta_task(void *ctx, size_t task, uint32_t thread)
{
    const gdn_job *job = ctx;
    const qwen35_engine *e = job->e;
    const qwen35_hparams *hp = e->hp;
    const uint32_t dk = hp->gdn_head_dim, Hk = hp->gdn_k_heads, Hv = hp->gdn_v_heads;
    const size_t conv = qwen35_gdn_conv_dim(hp);
    const rows_view *v = job->rows;
    const size_t r = v->batch ? task / Hv : 0, h = v->batch ? task % Hv : task;
    const uint32_t kh = (uint32_t)(h % Hk); /* the converter stores value heads tiled over key heads */
    const float *q = e->conv_out + r * conv + (size_t)kh * dk, *k = q + (size_t)Hk * dk;
    const float *val = e->conv_out + r * conv + 2 * (size_t)Hk * dk + h * dk;
    float *S = qwen35_state_delta(row_state(v, r), job->gdn) + h * (size_t)dk * dk;
    float *o = e->core + r * hp->gdn_inner + h * dk;
    const size_t gb = r * Hv + h;
    if (v->batch || v->n == 1) {
        qwen35_delta_recurrent(dk, dk, S, q, k, val, e->g[gb], e->beta[gb], o);
    } else if (v->log) {
        /* a verify pass: each row exactly as a decode step computes it */
        for (uint32_t t = 0; t < v->n; t++)
            qwen35_delta_recurrent(dk, dk, S, q + t * conv, k + t * conv, val + t * conv, e->g[t * Hv + h],
                                   e->beta[t * Hv + h], o + (size_t)t * hp->gdn_inner);
    } else
        qwen35_delta_chunked(dk, dk, S, v->n, q, k, conv, val, conv, e->g + h, e->beta + h, Hv, o, hp->gdn_inner,
                             e->delta_work + (size_t)thread * e->delta_work_floats);
}

/* Row r: each head's output RMS-normalised, times ssm_norm and silu(z). */
static void gated_norm_task(void *ctx, size_t r, uint32_t thread)
{
    (void)thread;
    const gdn_job *job = ctx;
    const qwen35_engine *e = job->e;
    const qwen35_hparams *hp = e->hp;
    const uint32_t dv = hp->gdn_head_dim;
    for (uint32_t h = 0; h < hp->gdn_v_heads; h++) {
        float *o = e->core + r * (size_t)hp->gdn_inner + (size_t)h * dv;
        const float *z = e->z + r * (size_t)hp->gdn_inner + (size_t)h * dv;
        gufo_x_cpu_rms_norm(o, job->g->norm, dv, hp->rms_eps, o);
        for (uint32_t i = 0; i < dv; i++)
            o[i] *= z[i] / (1.0f + expf(-z[i]));
    }
}

static gufo_status gdn_mixer(qwen35_engine *e, const rows_view *rows, const qwen35_gdn_weights *g, uint32_t gdn)
{
    const qwen35_hparams *hp = e->hp;
    const uint32_t n = rows->n;
    const qwen35_matrix *in[4] = {&g->wqkv, &g->wgate, &g->wbeta, &g->walpha};
    float *const in_out[4] = {e->mix, e->z, e->b, e->a};
    gufo_status st_mm = matmul(e, in, 4, e->n, n, in_out);
    if (st_mm != GUFO_OK)
        return st_mm;
    gdn_job job = {.e = e, .g = g, .rows = rows, .gdn = gdn};
    const uint32_t channels = qwen35_gdn_conv_dim(hp), dk = hp->gdn_head_dim;
    gufo_x_pool_run_work(e->pool, conv_task, &job, (channels + CONV_CHANNELS_PER_TASK - 1) / CONV_CHANNELS_PER_TASK,
                         (uint64_t)n * channels * hp->conv_kernel * 2);
    gufo_x_pool_run_work(e->pool, gdn_row_task, &job, n, (uint64_t)n * channels * 4);
    if (rows->log) {
        qwen35_verify_log *log = rows->log;
        const size_t row_floats = (size_t)n * channels, gb_floats = (size_t)n * hp->gdn_v_heads;
        memcpy(log->mix + (size_t)gdn * log->max_rows * channels, e->mix, row_floats * sizeof(float));
        memcpy(log->qkv + (size_t)gdn * log->max_rows * channels, e->conv_out, row_floats * sizeof(float));
        memcpy(log->g + (size_t)gdn * log->max_rows * hp->gdn_v_heads, e->g, gb_floats * sizeof(float));
        memcpy(log->beta + (size_t)gdn * log->max_rows * hp->gdn_v_heads, e->beta, gb_floats * sizeof(float));
    }
    const bool recurrent = rows->batch || n == 1 || rows->log;
    const uint64_t per_head = recurrent ? 4ull * dk * dk : (uint64_t)n * (4ull * dk * dk + 3ull * QWEN35_DELTA_CHUNK * dk);
    const size_t tasks = rows->batch ? (size_t)n * hp->gdn_v_heads : hp->gdn_v_heads;
    gufo_x_pool_run_work(e->pool, delta_task, &job, tasks, per_head * tasks);
    gufo_x_pool_run_work(e->pool, gated_norm_task, &job, n, (uint64_t)n * hp->gdn_inner * 8);
    const qwen35_matrix *out = &g->wout;
    return matmul(e, &out, 1, e->core, n, &e->y);
}

/* ---- attention and FFN --------------------------------------------------------- */

/* `mtp`: the rows are the MTP block's, at the sequences' MTP positions. */
static gufo_status attention_mixer(qwen35_engine *e, const rows_view *rows, const qwen35_attention_weights *a,
                                   uint32_t slot, bool mtp)
{
    const qwen35_hparams *hp = e->hp;
    const uint32_t n = rows->n;
    const qwen35_matrix *in[3] = {&a->wq, &a->wk, &a->wv};
    float *const in_out[3] = {e->q_full, e->k, e->v};
    gufo_status s = matmul(e, in, 3, e->n, n, in_out);
    if (s != GUFO_OK)
        return s;
    const size_t qw = (size_t)hp->n_head * hp->head_dim, kvw = (size_t)hp->n_head_kv * hp->head_dim;
    /* A single sequence goes in one call (its rows attend to each other);
     * a batch row by row, each over its own cache. */
    const uint32_t calls = rows->batch ? n : 1, per_call = rows->batch ? 1 : n;
    for (uint32_t c = 0; c < calls; c++) {
        qwen35_state *st = row_state(rows, c);
        qwen35_gated_attention(&e->attention, a->q_norm, a->k_norm, per_call, mtp ? st->mtp_n_past : st->n_past,
                               e->q_full + c * 2 * qw, e->k + c * kvw, e->v + c * kvw, qwen35_state_keys(st, slot),
                               qwen35_state_values(st, slot), st->capacity, e->q + c * qw, e->att + c * qw,
                               e->attention_scratch, e->attention_scratch_floats, e->pool);
    }
    const qwen35_matrix *out = &a->wo;
    return matmul(e, &out, 1, e->att, n, &e->y);
}

static gufo_status ffn(qwen35_engine *e, const qwen35_layer *L, uint32_t n)
{
    const qwen35_hparams *hp = e->hp;
    rms_rows(e->x, L->post_norm, n, hp->n_embd, hp->rms_eps, e->n);
    const qwen35_matrix *in[2] = {&L->ffn_gate, &L->ffn_up};
    float *const in_out[2] = {e->ffn_gate, e->ffn_up};
    gufo_status s = matmul(e, in, 2, e->n, n, in_out);
    if (s != GUFO_OK)
        return s;
    gufo_x_cpu_swiglu(e->ffn_gate, e->ffn_up, e->ffn_gate, (size_t)n * hp->n_ff);
    const qwen35_matrix *down = &L->ffn_down;
    if ((s = matmul(e, &down, 1, e->ffn_gate, n, &e->y)) != GUFO_OK)
        return s;
    add_rows(e->x, e->y, (size_t)n * hp->n_embd);
    return GUFO_OK;
}

/* ---- passes ------------------------------------------------------------------------ */

static gufo_status embed(qwen35_engine *e, const qwen35_matrix *table, const int32_t *tokens, uint32_t n, float *out,
                         gufo_error *err)
{
    const uint32_t D = e->hp->n_embd;
    for (uint32_t r = 0; r < n; r++) {
        const uint8_t *row = (const uint8_t *)table->data + (size_t)tokens[r] * table->row_bytes;
        if (gufo_tensor_dequantize(table->type, row, out + (size_t)r * D, D) != GUFO_OK)
            return gufo_error_set(err, GUFO_E_INTERNAL, "qwen35: embedding row %d could not be read", (int)tokens[r]);
    }
    return GUFO_OK;
}

static gufo_status check_rows(const qwen35_engine *e, const rows_view *rows, const int32_t *tokens, bool mtp,
                              gufo_error *err)
{
    const uint32_t n = rows->n;
    if (n == 0 || n > e->max_rows)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen35: %u rows in one call; 1..%u fit the scratch", n,
                              e->max_rows);
    for (uint32_t r = 0; r < (rows->batch ? n : 1); r++) {
        const qwen35_state *st = rows->states[r];
        const uint32_t pos0 = mtp ? st->mtp_n_past : st->n_past, count = rows->batch ? 1 : n;
        if ((uint64_t)pos0 + count > st->capacity || (uint64_t)pos0 + count > e->max_positions)
            return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen35: positions %u..%u are past the caches (%u)",
                                  pos0, pos0 + count - 1,
                                  st->capacity < e->max_positions ? st->capacity : e->max_positions);
        for (uint32_t q = 0; rows->batch && q < r; q++)
            if (rows->states[q] == st)
                return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT,
                                      "qwen35: rows %u and %u of a decode step are the same sequence", q, r);
    }
    for (uint32_t r = 0; r < n; r++)
        if (tokens[r] < 0 || (uint32_t)tokens[r] >= e->hp->n_vocab)
            return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen35: token %d is outside the vocabulary of %u",
                                  (int)tokens[r], e->hp->n_vocab);
    return GUFO_OK;
}

static gufo_status logits_of(qwen35_engine *e, const qwen35_matrix *head, const float *rows, uint32_t n)
{
    return matmul(e, &head, 1, rows, n, &e->logits);
}

static gufo_status trunk(qwen35_engine *e, const rows_view *rows, const int32_t *tokens, bool all_logits,
                         gufo_error *err)
{
    const qwen35_hparams *hp = e->hp;
    const uint32_t D = hp->n_embd, n = rows->n;
    if (e->w->mtp_only)
        return gufo_error_set(err, GUFO_E_UNSUPPORTED, "qwen35: this file holds only the MTP block (llama.cpp's --mtp "
                                                       "export); the trunk runs from the model's own file");
    gufo_status s = check_rows(e, rows, tokens, false, err);
    if (s != GUFO_OK)
        return s;
    if (all_logits && n > e->max_logit_rows)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen35: logits of %u rows asked; the scratch holds %u", n,
                              e->max_logit_rows);
    if ((s = embed(e, &e->w->token_embd, tokens, n, e->x, err)) != GUFO_OK)
        return s;
    const qwen35_state *first = rows->states[0]; /* every state has the same slots */
    for (uint32_t il = 0; il < hp->n_layer; il++) {
        const qwen35_layer *L = &e->w->layers[il];
        rms_rows(e->x, L->attn_norm, n, D, hp->rms_eps, e->n);
        s = L->recurrent ? gdn_mixer(e, rows, &L->gdn, (uint32_t)first->slot[il])
                         : attention_mixer(e, rows, &L->att, (uint32_t)first->slot[il], false);
        if (s == GUFO_OK) {
            add_rows(e->x, e->y, (size_t)n * D);
            s = ffn(e, L, n);
        }
        if (s != GUFO_OK)
            return gufo_error_set(err, GUFO_E_INTERNAL, "qwen35: block %u: a matrix product failed: %s", il,
                                  gufo_status_str(s));
    }
    for (uint32_t r = 0; r < (rows->batch ? n : 1); r++) {
        qwen35_state *st = rows->states[r];
        st->n_past += rows->batch ? 1 : n;
        st->kv_written = st->n_past;
    }
    rms_rows(e->x, e->w->output_norm, n, D, hp->rms_eps, e->hidden);
    const float *out = all_logits ? e->hidden : e->hidden + (size_t)(n - 1) * D;
    if ((s = logits_of(e, &e->w->output, out, all_logits ? n : 1)) != GUFO_OK)
        return gufo_error_set(err, GUFO_E_INTERNAL, "qwen35: the output product failed: %s", gufo_status_str(s));
    return GUFO_OK;
}

gufo_status qwen35_forward(qwen35_engine *e, qwen35_state *st, const int32_t *tokens, uint32_t n, bool all_logits,
                           gufo_error *err)
{
    qwen35_state *const states[1] = {st};
    const rows_view rows = {.n = n, .batch = false, .states = states};
    return trunk(e, &rows, tokens, all_logits, err);
}

gufo_status qwen35_verify(qwen35_engine *e, qwen35_state *st, qwen35_verify_log *log, const int32_t *tokens,
                          uint32_t n, gufo_error *err)
{
    if (n > log->max_rows)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen35: %u rows to verify; the log holds %u", n,
                              log->max_rows);
    memcpy(log->conv0, st->conv, st->n_gdn * st->conv_floats * sizeof(float));
    memcpy(log->delta0, st->delta, st->n_gdn * st->delta_floats * sizeof(float));
    log->n_past0 = st->n_past;
    log->n_rows = 0;
    qwen35_state *const states[1] = {st};
    const rows_view rows = {.n = n, .batch = false, .states = states, .log = log};
    gufo_status s = trunk(e, &rows, tokens, true, err);
    if (s == GUFO_OK)
        log->n_rows = n;
    return s;
}

gufo_status qwen35_decode_batch(qwen35_engine *e, qwen35_state *const *states, const int32_t *tokens, uint32_t n,
                                gufo_error *err)
{
    const rows_view rows = {.n = n, .batch = true, .states = states};
    return trunk(e, &rows, tokens, true, err);
}

gufo_status qwen35_mtp_forward(qwen35_engine *e, qwen35_state *st, const int32_t *tokens, const float *hidden,
                               uint32_t n, gufo_error *err)
{
    const qwen35_hparams *hp = e->hp;
    const qwen35_mtp_weights *m = &e->w->mtp;
    if (!e->w->has_mtp)
        return gufo_error_set(err, GUFO_E_UNSUPPORTED, "qwen35: this model has no MTP block");
    if (st->mtp_slot < 0)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen35: this sequence was made without an MTP cache");
    const uint32_t D = hp->n_embd;
    qwen35_state *const states[1] = {st};
    const rows_view rows = {.n = n, .batch = false, .states = states};
    gufo_status s = check_rows(e, &rows, tokens, true, err);
    if (s != GUFO_OK)
        return s;
    if (n > e->max_logit_rows)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen35 MTP: logits of %u rows asked; the scratch holds %u",
                              n, e->max_logit_rows);
    /* The hidden rows first: they may be e->hidden, which nothing below writes. */
    for (uint32_t r = 0; r < n; r++)
        gufo_x_cpu_rms_norm(hidden + (size_t)r * D, m->hnorm, D, hp->rms_eps, e->cat + (size_t)r * 2 * D + D);
    if ((s = embed(e, &m->embed, tokens, n, e->y, err)) != GUFO_OK)
        return s;
    for (uint32_t r = 0; r < n; r++)
        gufo_x_cpu_rms_norm(e->y + (size_t)r * D, m->enorm, D, hp->rms_eps, e->cat + (size_t)r * 2 * D);
    const qwen35_matrix *eh = &m->eh_proj;
    if ((s = matmul(e, &eh, 1, e->cat, n, &e->x)) != GUFO_OK)
        return gufo_error_set(err, GUFO_E_INTERNAL, "qwen35 MTP: eh_proj failed: %s", gufo_status_str(s));
    rms_rows(e->x, m->block.attn_norm, n, D, hp->rms_eps, e->n);
    s = attention_mixer(e, &rows, &m->block.att, (uint32_t)st->mtp_slot, true);
    if (s == GUFO_OK) {
        add_rows(e->x, e->y, (size_t)n * D);
        s = ffn(e, &m->block, n);
    }
    if (s != GUFO_OK)
        return gufo_error_set(err, GUFO_E_INTERNAL, "qwen35 MTP: a matrix product failed: %s", gufo_status_str(s));
    st->mtp_n_past += n;
    /* The input hidden rows were read above, so e->hidden may take the
     * output: what a chained draft step pairs with the drafted token. */
    rms_rows(e->x, m->head_norm, n, D, hp->rms_eps, e->hidden);
    if ((s = logits_of(e, &m->head, e->hidden, n)) != GUFO_OK)
        return gufo_error_set(err, GUFO_E_INTERNAL, "qwen35 MTP: the head product failed: %s", gufo_status_str(s));
    return GUFO_OK;
}

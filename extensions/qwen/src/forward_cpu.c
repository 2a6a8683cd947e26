/* forward_cpu.c — the Qwen3 layers over a set of rows (forward_cpu.h). */
#include "forward_cpu.h"

#include <math.h>
#include <string.h>

#include <gufo_manifest_qwen.h>

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
    const uint32_t threads = qwen_pool_threads(pool);
    const uint32_t group = hp->n_head / hp->n_head_kv;
    const uint64_t attention_floats = gufo_x_cpu_attention_scratch_floats(group, max_positions);
    const uint64_t matmul_floats = (gufo_x_cpu_matmul_scratch_bytes(widest, rows, threads) + 63) / 64 * 16;
    /* Each buffer starts on a 64-byte line so threads writing neighbouring
     * buffers never share one. */
    const uint64_t sizes[] = {
        hp->head_dim_k / 2,                                  /* inv_freq */
        rows * hp->n_embd, rows * hp->n_embd,                /* x, h */
        rows * q_width, rows * kw, rows * vw, rows * att_width, /* q, k, v, att */
        rows * hp->n_ff, rows * hp->n_ff,                    /* gate, up */
        (uint64_t)max_out * hp->n_embd,                      /* normed */
        (uint64_t)max_out * hp->n_vocab,                     /* logits */
        (uint64_t)threads * attention_floats,                /* scores */
        rows,                                                /* n_keys */
        matmul_floats,                                       /* matmul_scratch */
    };
    float *matmul_scratch = NULL, *n_keys = NULL;
    float **slots[] = {&e->inv_freq, &e->x,      &e->h,      &e->q,      &e->k,      &e->v,
                       &e->att,      &e->gate,   &e->up,     &e->normed, &e->logits, &e->scores,
                       &n_keys,      &matmul_scratch};
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
    float *cursor = e->block;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        *slots[i] = cursor;
        cursor += (sizes[i] + 15) / 16 * 16;
    }
    e->n_keys = (uint32_t *)(void *)n_keys;
    e->scores_per_thread = (size_t)attention_floats;
    e->matmul_scratch = matmul_scratch;
    e->matmul_scratch_bytes = (size_t)(matmul_floats * sizeof(float));
    e->numerics = GUFO_X_CPU_Q8;
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

gufo_status qwen_engine_choose_numerics(qwen_engine *e, const gufo_options *options, gufo_error *err)
{
    const char *value = GUFO_MANIFEST_QWEN_OPTION_QWEN_CPU_MATMUL_DEFAULT;
    if (options)
        (void)gufo_options_get_string(options, GUFO_MANIFEST_QWEN_OPTION_QWEN_CPU_MATMUL_NAME, &value);
    if (strcmp(value, "q8") == 0)
        e->numerics = GUFO_X_CPU_Q8;
    else if (strcmp(value, "fp32") == 0)
        e->numerics = GUFO_X_CPU_EXACT;
    else
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "option --%s: '%s' is neither q8 nor fp32",
                              GUFO_MANIFEST_QWEN_OPTION_QWEN_CPU_MATMUL_NAME, value);
    gufo_log(GUFO_LOG_DEBUG, GUFO_MANIFEST_QWEN_PROVIDER_QWEN_CPU_ID, "matmul %s; CPU kernels: %s",
             qwen_engine_numerics_name(e), gufo_x_cpu_isa_name(gufo_x_cpu_isa_active()));
    return GUFO_OK;
}

const char *qwen_engine_numerics_name(const qwen_engine *e)
{
    return e->numerics == GUFO_X_CPU_EXACT ? "fp32" : "q8";
}

/* ---- element-wise pieces ------------------------------------------------ */

/* y = x / sqrt(mean(x^2) + eps) * weight; the runtime's, whose sum is in
 * double so the only rounding that matters is the final float, as in an fp32
 * reference, and whose order of additions is the same on every CPU. */
static void rms_norm(const float *x, const float *weight, uint32_t n, float eps, float *y)
{
    gufo_x_cpu_rms_norm(x, weight, n, eps, y);
}

/* NEOX rotation: element i pairs with i + d/2. */
/* The rotation of position `pos`: cos and sin of pos * base^(-2i/d), i < d/2.
 * Computed once per row and applied to all its query and key heads. */
static void rope_angles(uint32_t half, uint32_t pos, const float *inv_freq, float *c, float *s)
{
    for (uint32_t i = 0; i < half; i++) {
        const float angle = (float)pos * inv_freq[i];
        c[i] = cosf(angle);
        s[i] = sinf(angle);
    }
}

static void rope(float *v, uint32_t half, const float *c, const float *s)
{
    for (uint32_t i = 0; i < half; i++) {
        const float a = v[i], b = v[i + half];
        v[i] = a * c[i] - b * s[i];
        v[i + half] = a * s[i] + b * c[i];
    }
}

/* ---- parallel sections -------------------------------------------------- */

typedef struct layer_job {
    qwen_engine *e;
    const qwen_row *rows;
    size_t n_rows;
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
    float c[QWEN_MAX_HEAD_DIM / 2], sn[QWEN_MAX_HEAD_DIM / 2];
    rope_angles(dk / 2, row->pos, e->inv_freq, c, sn);
    for (uint32_t h = 0; h < hp->n_head; h++) {
        rms_norm(q + (size_t)h * dk, L->q_norm, dk, hp->rms_eps, q + (size_t)h * dk);
        rope(q + (size_t)h * dk, dk / 2, c, sn);
    }
    const uint32_t dv = hp->head_dim_v;
    for (uint32_t h = 0; h < hp->n_head_kv; h++) {
        float *kcache = qwen_kv_keys(row->kv, job->layer, h) + (size_t)row->pos * dk;
        rms_norm(k + (size_t)h * dk, L->k_norm, dk, hp->rms_eps, kcache);
        rope(kcache, dk / 2, c, sn);
        memcpy(qwen_kv_values(row->kv, job->layer, h) + (size_t)row->pos * dv, e->v + r * (size_t)vw + (size_t)h * dv,
               (size_t)dv * sizeof(float));
    }
}

/* Rows per attention task: a prefill chunk is cut in blocks of this many
 * rows so both threads get work; a block's rows that share a history (all of
 * them in prefill, none in a decode batch) go to the kernel in one call. */
#define ATTENTION_ROWS 8u

/* One block of rows and one KV head: causal softmax attention over each
 * row's history (the runtime kernel: identical bits however rows are grouped). */
static void attention_task(void *ctx, size_t task, uint32_t thread)
{
    const layer_job *job = ctx;
    const qwen_engine *e = job->e;
    const qwen_hparams *hp = e->hp;
    const uint32_t kvh = (uint32_t)(task % hp->n_head_kv), group = hp->n_head / hp->n_head_kv;
    const size_t first = task / hp->n_head_kv * ATTENTION_ROWS;
    const size_t last = first + ATTENTION_ROWS < job->n_rows ? first + ATTENTION_ROWS : job->n_rows;
    const uint32_t dk = hp->head_dim_k, dv = hp->head_dim_v;
    float *scratch = e->scores + (size_t)thread * e->scores_per_thread;
    for (size_t r = first; r < last;) {
        const qwen_kv *kv = job->rows[r].kv;
        size_t end = r + 1;
        while (end < last && job->rows[end].kv == kv)
            end++;
        const gufo_x_cpu_attention_args a = {
            .n_rows = (uint32_t)(end - r),
            .group = group,
            .dk = dk,
            .dv = dv,
            .q = e->q + (r * hp->n_head + (size_t)kvh * group) * dk,
            .q_row_stride = (size_t)hp->n_head * dk,
            .k = qwen_kv_keys(kv, job->layer, kvh),
            .v = qwen_kv_values(kv, job->layer, kvh),
            .k_stride = dk,
            .v_stride = dv,
            .n_keys = e->n_keys + r,
            .out = e->att + (r * hp->n_head + (size_t)kvh * group) * dv,
            .out_row_stride = (size_t)hp->n_head * dv,
            .scale = 1.0f / sqrtf((float)dk),
        };
        (void)gufo_x_cpu_attention(&a, scratch); /* arguments are valid by construction */
        r = end;
    }
}

/* ---- the pass ------------------------------------------------------------ */

/* y[i] = X w[i]^T for n rows of X, in one parallel section. */
static gufo_status matmul(qwen_engine *e, const qwen_matrix *const *w, size_t n_w, const float *x, size_t n,
                          float *const *y)
{
    return gufo_x_cpu_matmul(e->pool, w, n_w, x, n, y, e->numerics, e->matmul_scratch, e->matmul_scratch_bytes);
}

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
    if ((st = matmul(e, qkv, 3, e->h, n, qkv_out)) != GUFO_OK)
        return st;
    layer_job job = {.e = e, .rows = rows, .n_rows = n, .layer = il};
    uint64_t span = 0; /* positions attended over all rows */
    for (size_t r = 0; r < n; r++) {
        e->n_keys[r] = rows[r].pos + 1;
        span += rows[r].pos + 1;
    }
    qwen_pool_run_work(e->pool, qk_task, &job, n, (uint64_t)n * (hp->n_head + hp->n_head_kv) * hp->head_dim_k * 8);
    qwen_pool_run_work(e->pool, attention_task, &job, (n + ATTENTION_ROWS - 1) / ATTENTION_ROWS * hp->n_head_kv,
                       span * hp->n_head * ((uint64_t)hp->head_dim_k + hp->head_dim_v));
    const qwen_matrix *wo = &L->wo;
    if ((st = matmul(e, &wo, 1, e->att, n, &e->h)) != GUFO_OK)
        return st;
    for (size_t i = 0; i < n * D; i++)
        e->x[i] += e->h[i];

    for (size_t r = 0; r < n; r++)
        rms_norm(e->x + r * D, L->ffn_norm, D, hp->rms_eps, e->h + r * D);
    const qwen_matrix *gate_up[2] = {&L->gate, &L->up};
    float *const gate_up_out[2] = {e->gate, e->up};
    if ((st = matmul(e, gate_up, 2, e->h, n, gate_up_out)) != GUFO_OK)
        return st;
    gufo_x_cpu_swiglu(e->gate, e->up, e->gate, n * F);
    const qwen_matrix *down = &L->down;
    if ((st = matmul(e, &down, 1, e->gate, n, &e->h)) != GUFO_OK)
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
        gufo_status st = gufo_x_cpu_matrix_row(embd, rows[r].token, e->x + r * D);
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
    const qwen_matrix *output = &e->w->output;
    gufo_status st = matmul(e, &output, 1, e->normed, n_out, &e->logits);
    if (st != GUFO_OK)
        return gufo_error_set(err, st, "qwen forward: output matrix product failed");
    return GUFO_OK;
}

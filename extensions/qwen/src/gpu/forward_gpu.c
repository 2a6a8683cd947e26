/* forward_gpu.c — one step on the GPU: scratch, the layer sequence, graphs (model_gpu.h).
 *
 * The same layer as forward_cpu.h describes, as kernel launches on the
 * model's stream. Kernels read the step's rows (token, position, cache) from
 * a device array rather than from launch arguments, so a decode step of a
 * given batch size is the same launch sequence every time: it is captured
 * once into a graph (experimental/graph.h) and replayed, after copying the
 * new rows in. Prefill chunks vary in length and run directly.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_gpu.h"

gufo_status qwen_gpu_failed(gufo_error *err, const char *what)
{
    return gufo_error_set(err, GUFO_E_DEVICE, "qwen-gpu: %s: %s", what, qwen_gpu_last_error());
}

#define ALIGN_BYTES 256u


gufo_status qwen_gpu_scratch_init(qwen_gpu_model *model, uint32_t max_rows, uint32_t max_out, gufo_error *err)
{
    qwen_gpu_scratch *s = &model->scratch;
    const qwen_hparams *hp = &model->hp;
    memset(s, 0, sizeof *s);
    s->max_rows = max_rows;
    s->max_out = max_out;
    const uint32_t decode_parts = model->base.max_batch * QWEN_GPU_DECODE_SPLITS;
    s->max_row_splits = decode_parts > 4 * max_rows ? decode_parts : 4 * max_rows;
    const size_t R = max_rows, D = hp->n_embd, F = hp->n_ff, d = hp->head_dim_k;
    const size_t qw = (size_t)hp->n_head * d, kw = (size_t)hp->n_head_kv * d;
    size_t widest = D > F ? D : F;
    if (qw > widest)
        widest = qw;
    const size_t sizes[] = {
        R * D * 4, R * D * 4,                               /* x, h */
        R * qw * 4, R * kw * 4, R * kw * 4, R * qw * 4,     /* q, k, v, att */
        R * F * 4, R * F * 4,                               /* gate, up */
        (size_t)s->max_row_splits * hp->n_head * (d + 2) * 4, /* partials */
        (size_t)max_out * D * 4,                            /* normed */
        (size_t)max_out * hp->n_vocab * 4,                  /* logits */
        R * sizeof(qwen_gpu_row),                           /* rows */
        (size_t)max_out * sizeof(qwen_gpu_sampling),        /* sampling */
        (size_t)max_out * sizeof(int32_t),                  /* tokens */
        R * widest,                                         /* xq.qs */
        R * widest / 32 * 2 * 4,                            /* xq.ds */
    };
    void **slots[] = {
        (void **)&s->x,        (void **)&s->h,      (void **)&s->q,      (void **)&s->k,
        (void **)&s->v,        (void **)&s->att,    (void **)&s->gate,   (void **)&s->up,
        (void **)&s->partials, (void **)&s->normed, (void **)&s->logits, (void **)&s->rows,
        (void **)&s->sampling, (void **)&s->tokens,   (void **)&s->xq.qs,  (void **)&s->xq.ds,
    };
    _Static_assert(sizeof sizes / sizeof sizes[0] == sizeof slots / sizeof slots[0], "one size per buffer");
    gufo_status st = qwen_gpu_alloc_carved(model->base.memory, GUFO_MEMORY_DEVICE, sizes, slots,
                                           sizeof sizes / sizeof sizes[0], ALIGN_BYTES, "scratch", &s->block, err);
    return st == GUFO_OK ? st : gufo_error_prefix(err, st, "qwen-gpu scratch for %u rows", max_rows);
}

/* The largest matrix of any layer (the output matrix never goes through the
 * BLAS: prefill wants one row of logits). */
static uint64_t largest_layer_matrix(const qwen_gpu_model *model)
{
    uint64_t largest = 0;
    for (uint32_t il = 0; il < model->hp.n_layer; il++) {
        const qwen_gpu_layer *L = &model->weights.layers[il];
        const qwen_gpu_matrix *all[] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->gate, &L->up, &L->down};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
            if ((uint64_t)all[i]->rows * all[i]->cols > largest)
                largest = (uint64_t)all[i]->rows * all[i]->cols;
    }
    return largest;
}

gufo_status qwen_gpu_blas_init(qwen_gpu_model *model, gufo_error *err)
{
    qwen_gpu_scratch *s = &model->scratch;
    gufo_status st = gufo_memory_alloc(model->base.memory, GUFO_MEMORY_DEVICE, QWEN_GPU_BLAS_WORKSPACE, ALIGN_BYTES,
                                       "scratch", &s->blas_workspace, err);
    if (st != GUFO_OK)
        return gufo_error_prefix(err, st, "qwen-gpu BLAS workspace");
    if (qwen_gpu_blas_create(&model->blas, model->stream, s->blas_workspace, QWEN_GPU_BLAS_WORKSPACE))
        return qwen_gpu_failed(err, "creating the BLAS handle");
    if (!model->blas)
        return GUFO_OK; /* no BLAS in this build: nothing to decode into */
    void *dequantized = NULL;
    st = gufo_memory_alloc(model->base.memory, GUFO_MEMORY_DEVICE, (size_t)largest_layer_matrix(model) * sizeof(float),
                           ALIGN_BYTES, "scratch", &dequantized, err);
    if (st != GUFO_OK)
        return gufo_error_prefix(err, st, "qwen-gpu prefill scratch");
    s->dequantized = dequantized;
    /* Widest input of a layer product: hidden, FFN or attention output. */
    const qwen_hparams *hp = &model->hp;
    uint64_t widest = hp->n_embd > hp->n_ff ? hp->n_embd : hp->n_ff;
    if ((uint64_t)hp->n_head * hp->head_dim_k > widest)
        widest = (uint64_t)hp->n_head * hp->head_dim_k;
    st = gufo_memory_alloc(model->base.memory, GUFO_MEMORY_DEVICE, (size_t)(s->max_rows * widest * 2u), ALIGN_BYTES,
                           "scratch", &s->activations16, err);
    if (st != GUFO_OK)
        return gufo_error_prefix(err, st, "qwen-gpu prefill scratch");
    return GUFO_OK;
}

void qwen_gpu_scratch_release(qwen_gpu_model *model)
{
    qwen_gpu_blas_destroy(model->blas);
    model->blas = NULL;
    gufo_memory_free(model->base.memory, model->scratch.dequantized);
    gufo_memory_free(model->base.memory, model->scratch.activations16);
    gufo_memory_free(model->base.memory, model->scratch.blas_workspace);
    gufo_memory_free(model->base.memory, model->scratch.block);
    memset(&model->scratch, 0, sizeof model->scratch);
}

typedef struct step {
    qwen_gpu_model *model;
    uint32_t n, n_out, splits;
    qwen_gpu_pick pick;
    bool gemm;  /* layer products through the BLAS (long prefill chunks) */
    bool q8;    /* matrix-vector products of quantized weights from int8 activations (scratch.xq) */
    bool flash; /* attention on the tensor cores (one history's prefill chunk) */
    gufo_error *err;
} step;

/* y (+)= m x; in q8 steps, x must also sit in scratch.xq as int8 blocks. */
static int product(const step *p, void *stream, const qwen_gpu_matrix *m, const float *x, float *y, int accumulate)
{
    if (p->gemm)
        return qwen_gpu_gemm(p->model->blas, stream, m, p->model->prefill_bf16, p->model->scratch.dequantized,
                             p->model->scratch.activations16, x, p->n, y, accumulate);
    if (p->q8 && qwen_gpu_matmul_q8_supported(m->type))
        return qwen_gpu_matmul_q8(stream, m, p->model->scratch.xq, p->n, y, accumulate);
    return qwen_gpu_matmul(stream, m, x, p->n, y, accumulate);
}

/* ys[i] = ms[i] x for products of one input (count <= QWEN_GPU_MAX_FUSED): in
 * q8 steps the quantized ones of one type share a launch (Q4_K_M mixes Q4_K
 * and Q6_K within a layer); the rest go one by one. */
static int products(const step *p, void *stream, const qwen_gpu_matrix *const *ms, float *const *ys, uint32_t count,
                    const float *x)
{
    bool done[QWEN_GPU_MAX_FUSED] = {false};
    int bad = p->q8 ? qwen_gpu_products_q8(stream, ms, ys, count, p->model->scratch.xq, p->n, done) : 0;
    for (uint32_t i = 0; i < count; i++)
        if (!done[i])
            bad |= product(p, stream, ms[i], x, ys[i], 0);
    return bad;
}

/* y = rmsnorm(x) for n rows, and in q8 steps also into scratch.xq. */
static int norm(const step *p, void *stream, const float *x, const float *weight, uint32_t n, float *y)
{
    const qwen_gpu_dims *dims = &p->model->dims;
    if (p->q8)
        return qwen_gpu_rms_norm_q8(stream, x, weight, n, dims->n_embd, dims->rms_eps, y, p->model->scratch.xq);
    return qwen_gpu_rms_norm(stream, x, weight, n, dims->n_embd, dims->rms_eps, y);
}

/* Enqueues the whole step on `stream` (called directly or under capture). */
static gufo_status record(void *userdata, void *stream)
{
    const step *p = userdata;
    qwen_gpu_model *model = p->model;
    const qwen_gpu_dims *dims = &model->dims;
    const qwen_gpu_weights *w = &model->weights;
    const qwen_gpu_scratch *s = &model->scratch;
    const uint32_t n = p->n, D = dims->n_embd;
    int bad = qwen_gpu_embed(stream, &w->token_embd, s->rows, n, s->x);
    for (uint32_t il = 0; il < dims->n_layer && !bad; il++) {
        const qwen_gpu_layer *L = &w->layers[il];
        bad |= norm(p, stream, s->x, L->attn_norm, n, s->h);
        const qwen_gpu_matrix *qkv[] = {&L->wq, &L->wk, &L->wv};
        float *const qkv_out[] = {s->q, s->k, s->v};
        bad |= products(p, stream, qkv, qkv_out, 3, s->h);
        bad |= qwen_gpu_qk_norm_rope_store(stream, dims, il, s->rows, n, s->q, s->k, s->v, L->q_norm, L->k_norm,
                                           w->inv_freq);
        /* In q8 steps the merge of the split-K kernel also writes att as int8 blocks (one launch fewer). */
        const bool merge_q8 = p->q8 && !p->flash && dims->head_dim % 32 == 0;
        if (p->flash)
            bad |= qwen_gpu_attention_prefill(stream, dims, il, s->rows, n, s->q, s->att);
        else
            bad |= qwen_gpu_attention(stream, dims, il, s->rows, n, s->q, p->splits, s->partials, s->att,
                                      merge_q8 ? &s->xq : NULL);
        if (p->q8 && !merge_q8)
            bad |= qwen_gpu_quantize_q8(stream, s->att, n, dims->n_head * dims->head_dim, s->xq);
        bad |= product(p, stream, &L->wo, s->att, s->x, 1);
        bad |= norm(p, stream, s->x, L->ffn_norm, n, s->h);
        const qwen_gpu_matrix *gate_up[] = {&L->gate, &L->up};
        float *const gate_up_out[] = {s->gate, s->up};
        bad |= products(p, stream, gate_up, gate_up_out, 2, s->h);
        if (p->q8)
            bad |= qwen_gpu_swiglu_q8(stream, s->gate, s->up, n, dims->n_ff, s->xq);
        else
            bad |= qwen_gpu_swiglu(stream, s->gate, s->up, (size_t)n * dims->n_ff);
        bad |= product(p, stream, &L->down, s->gate, s->x, 1);
    }
    if (!bad && p->n_out) {
        /* The output matrix is a matrix-vector product even after a BLAS prefill. */
        step out = *p;
        out.n = p->n_out;
        out.gemm = false;
        out.q8 = p->model->decode_q8;
        bad |= norm(&out, stream, s->x + (size_t)(n - p->n_out) * D, w->output_norm, p->n_out, s->normed);
        bad |= product(&out, stream, &w->output, s->normed, s->logits, 0);
        if (p->pick == QWEN_GPU_PICK_ARGMAX)
            bad |= qwen_gpu_argmax(stream, s->logits, p->n_out, dims->n_vocab, s->tokens);
        else if (p->pick == QWEN_GPU_PICK_SAMPLE)
            bad |= qwen_gpu_sample(stream, s->logits, p->n_out, dims->n_vocab, s->sampling, s->tokens);
    }
    return bad ? qwen_gpu_failed(p->err, "launching the step's kernels") : GUFO_OK;
}

uint32_t qwen_gpu_prefill_splits(const qwen_gpu_row *rows, uint32_t n, uint32_t max_row_splits)
{
    uint32_t longest = 0;
    for (uint32_t i = 0; i < n; i++)
        if (rows[i].pos + 1 > longest)
            longest = rows[i].pos + 1;
    uint32_t splits = (longest + QWEN_GPU_PREFILL_SPLIT_SPAN - 1) / QWEN_GPU_PREFILL_SPLIT_SPAN;
    uint32_t cap = max_row_splits / n;
    if (cap > QWEN_GPU_MAX_SPLITS)
        cap = QWEN_GPU_MAX_SPLITS;
    if (splits > cap)
        splits = cap;
    return splits ? splits : 1;
}

gufo_status qwen_gpu_forward(qwen_gpu_model *model, uint32_t n, uint32_t n_out, qwen_gpu_pick pick, bool graph,
                             gufo_error *err)
{
    qwen_gpu_scratch *s = &model->scratch;
    if (n == 0 || n > s->max_rows || n_out > s->max_out || n_out > n)
        return gufo_error_set(err, GUFO_E_INTERNAL, "qwen-gpu forward: %u rows / %u outputs exceed the scratch (%u / %u)",
                              n, n_out, s->max_rows, s->max_out);
    step p = {.model = model, .n = n, .n_out = n_out, .pick = n_out ? pick : QWEN_GPU_PICK_NONE, .err = err};
    p.splits = graph ? QWEN_GPU_DECODE_SPLITS : qwen_gpu_prefill_splits(model->rows_host, n, s->max_row_splits);
    p.gemm = !graph && model->blas && n >= QWEN_GPU_GEMM_MIN_ROWS;
    p.q8 = !p.gemm && model->decode_q8;
    /* Prefill rows are one history's consecutive positions (qwen_gpu_prefill). */
    p.flash = !graph && model->flash_prefill && n >= QWEN_GPU_GEMM_MIN_ROWS;
    if (qwen_gpu_to_device(s->rows, model->rows_host, n * sizeof(qwen_gpu_row), model->stream))
        return qwen_gpu_failed(err, "copying the step's rows");
    const qwen_gpu_run run = {.stream = model->stream,
                              .graphs = graph && model->use_graphs ? model->graphs : NULL,
                              .graph_key = (uint64_t)n * 4u + (uint64_t)p.pick,
                              .pick = p.pick,
                              .n_out = n_out,
                              .sampling_host = model->sampling_host,
                              .sampling = s->sampling,
                              .tokens = s->tokens,
                              .tokens_host = model->tokens_host};
    return qwen_gpu_run_step(&run, record, &p, err); /* the callers name the step */
}

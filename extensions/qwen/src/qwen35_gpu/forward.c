/* qwen35_gpu/forward.c — one step on the GPU: scratch, the block sequence, graphs (model.h).
 *
 * The CPU core's pass (../qwen35/forward.h) as launches on the model's
 * stream: ../gpu's kernels for embedding, RMSNorm, products, attention over
 * the caches, SwiGLU, argmax and sampling; kernels.h's for the Gated
 * DeltaNet mixer and the attention's query/gate split, partial RoPE and
 * output gate. Kernels read the step's rows and sequences from device arrays,
 * so a decode step of a given batch size is the same launch sequence every
 * time: captured once into a graph and replayed after the new rows are
 * copied in. Prefill chunks vary in length and run directly.
 */
#include <stdio.h>
#include <string.h>

#include "../gpu/model_gpu.h"
#include "model.h"

gufo_status qwen35_gpu_failed(gufo_error *err, const char *what)
{
    return gufo_error_set(err, GUFO_E_DEVICE, "qwen35-gpu: %s: %s", what, qwen_gpu_last_error());
}

#define ALIGN_BYTES 256u


static uint64_t max2(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

/* Widest input of any product: hidden, FFN, the DeltaNet's values, the attention's output. */
static uint64_t widest_input(const qwen35_hparams *hp)
{
    return max2(max2(hp->n_embd, hp->n_ff), max2(hp->gdn_inner, (uint64_t)hp->n_head * hp->head_dim));
}

static gufo_status blas_init(qwen35_gpu_model *model, gufo_error *err)
{
    qwen35_gpu_scratch *s = &model->scratch;
    gufo_memory *memory = model->base.memory;
    gufo_status st = gufo_memory_alloc(memory, GUFO_MEMORY_DEVICE, QWEN35_GPU_BLAS_WORKSPACE, ALIGN_BYTES, "scratch",
                                       &s->blas_workspace, err);
    if (st != GUFO_OK)
        return gufo_error_prefix(err, st, "qwen35-gpu BLAS workspace");
    if (qwen_gpu_blas_create(&model->blas, model->stream, s->blas_workspace, QWEN35_GPU_BLAS_WORKSPACE))
        return qwen35_gpu_failed(err, "creating the BLAS handle");
    if (!model->blas)
        return GUFO_OK; /* no BLAS in this build: prefill products stay on the kernels */
    st = gufo_memory_alloc(memory, GUFO_MEMORY_DEVICE, (size_t)model->weights.largest_layer_matrix * sizeof(float),
                           ALIGN_BYTES, "scratch", &s->dequantized, err);
    if (st == GUFO_OK)
        st = gufo_memory_alloc(memory, GUFO_MEMORY_DEVICE, (size_t)(s->max_rows * widest_input(&model->hp) * 2u),
                               ALIGN_BYTES, "scratch", &s->activations16, err);
    return st == GUFO_OK ? GUFO_OK : gufo_error_prefix(err, st, "qwen35-gpu prefill scratch");
}

gufo_status qwen35_gpu_scratch_init(qwen35_gpu_model *model, uint32_t max_rows, uint32_t max_out, gufo_error *err)
{
    qwen35_gpu_scratch *s = &model->scratch;
    const qwen35_hparams *hp = &model->hp;
    memset(s, 0, sizeof *s);
    s->max_rows = max_rows;
    s->max_out = max_out;
    const uint32_t decode_parts = model->base.max_batch * QWEN35_GPU_DECODE_SPLITS;
    s->max_row_splits = decode_parts > 4 * max_rows ? decode_parts : 4 * max_rows;
    const size_t R = max_rows, D = hp->n_embd, F = hp->n_ff, hd = hp->head_dim;
    const size_t conv = qwen35_gdn_conv_dim(hp), Vd = hp->gdn_inner, Hv = hp->gdn_v_heads;
    const size_t qw = (size_t)hp->n_head * hd, kvw = (size_t)hp->n_head_kv * hd;
    const size_t widest = (size_t)widest_input(hp);
    const size_t sizes[] = {
        R * D * 4, R * D * 4,                                       /* x, h */
        R * conv * 4, R * conv * 4, R * Vd * 4,                     /* mix, conv_out, z */
        R * Hv * 4, R * Hv * 4, R * Hv * 4, R * Hv * 4, R * Vd * 4, /* b, a, beta, g, core */
        R * 2 * qw * 4, R * kvw * 4, R * kvw * 4, R * qw * 4, R * qw * 4, /* q_full, k, v, q, att */
        (size_t)s->max_row_splits * hp->n_head * (hd + 2) * 4,      /* partials */
        R * F * 4, R * F * 4,                                       /* gate, up */
        (size_t)max_out * D * 4, (size_t)max_out * hp->n_vocab * 4, /* normed, logits */
        R * sizeof(qwen_gpu_row), R * sizeof(qwen35_gpu_seq),       /* rows, seqs */
        (size_t)max_out * sizeof(qwen_gpu_sampling), (size_t)max_out * sizeof(int32_t), /* sampling, tokens */
        R * widest, R * widest / 32 * 2 * 4,                        /* xq.qs, xq.ds */
    };
    void **slots[] = {
        (void **)&s->x,      (void **)&s->h,        (void **)&s->mix,      (void **)&s->conv_out,
        (void **)&s->z,      (void **)&s->b,        (void **)&s->a,        (void **)&s->beta,
        (void **)&s->g,      (void **)&s->core,     (void **)&s->q_full,   (void **)&s->k,
        (void **)&s->v,      (void **)&s->q,        (void **)&s->att,      (void **)&s->partials,
        (void **)&s->gate,   (void **)&s->up,       (void **)&s->normed,   (void **)&s->logits,
        (void **)&s->rows,   (void **)&s->seqs,     (void **)&s->sampling, (void **)&s->tokens,
        (void **)&s->xq.qs,  (void **)&s->xq.ds,
    };
    _Static_assert(sizeof sizes / sizeof sizes[0] == sizeof slots / sizeof slots[0], "one size per buffer");
    gufo_status st = qwen_gpu_alloc_carved(model->base.memory, GUFO_MEMORY_DEVICE, sizes, slots,
                                           sizeof sizes / sizeof sizes[0], ALIGN_BYTES, "scratch", &s->block, err);
    if (st != GUFO_OK)
        return gufo_error_prefix(err, st, "qwen35-gpu scratch for %u rows", max_rows);
    return blas_init(model, err);
}

void qwen35_gpu_scratch_release(qwen35_gpu_model *model)
{
    qwen_gpu_blas_destroy(model->blas);
    model->blas = NULL;
    gufo_memory *memory = model->base.memory;
    gufo_memory_free(memory, model->scratch.dequantized);
    gufo_memory_free(memory, model->scratch.activations16);
    gufo_memory_free(memory, model->scratch.blas_workspace);
    gufo_memory_free(memory, model->scratch.block);
    memset(&model->scratch, 0, sizeof model->scratch);
}

typedef struct step {
    qwen35_gpu_model *model;
    uint32_t n, n_seq, n_out, splits;
    qwen_gpu_pick pick;
    bool gemm; /* block products through the BLAS (long prefill chunks) */
    bool q8;   /* quantized weights times int8 activations (scratch.xq) */
    gufo_error *err;
} step;

/* Most products of one input a block makes (the Gated DeltaNet's qkv, z, beta, alpha). */
#define MAX_PRODUCTS 4u

/* How a product's input arrives: as floats only, or also as int8 blocks in
 * scratch.xq already (written by the norm or SwiGLU kernel that made it, in q8 steps). */
enum { FLOATS = 0, ALSO_INT8 = 1 };

/* ys[i] (+)= ms[i] x for products of one input of `cols` values: through the
 * BLAS in long prefill chunks; else quantized weights from int8 activations
 * (x quantized once for all of them unless `x_int8` says it is; without
 * `accumulate`, those of one type fused into shared launches), the rest in
 * float32. */
static int products(const step *p, void *stream, const qwen_gpu_matrix *const *ms, float *const *ys, uint32_t count,
                    const float *x, int x_int8, uint32_t cols, int accumulate)
{
    qwen35_gpu_model *model = p->model;
    int bad = 0;
    bool done[MAX_PRODUCTS] = {false}, quantized = false;
    if (p->q8) {
        for (uint32_t i = 0; i < count && !quantized; i++)
            quantized = qwen_gpu_matmul_q8_supported(ms[i]->type);
        if (quantized && x_int8 != ALSO_INT8)
            bad |= qwen_gpu_quantize_q8(stream, x, p->n, cols, model->scratch.xq);
        if (quantized && !accumulate)
            bad |= qwen_gpu_products_q8(stream, ms, ys, count, model->scratch.xq, p->n, done);
    }
    for (uint32_t i = 0; i < count; i++) {
        const qwen_gpu_matrix *m = ms[i];
        if (done[i])
            continue;
        if (p->gemm)
            bad |= qwen_gpu_gemm(model->blas, stream, m, model->prefill_bf16, model->scratch.dequantized,
                                 model->scratch.activations16, x, p->n, ys[i], accumulate);
        else if (quantized && qwen_gpu_matmul_q8_supported(m->type))
            bad |= qwen_gpu_matmul_q8(stream, m, model->scratch.xq, p->n, ys[i], accumulate);
        else
            bad |= qwen_gpu_matmul(stream, m, x, p->n, ys[i], accumulate);
    }
    return bad;
}

static int product(const step *p, void *stream, const qwen_gpu_matrix *m, const float *x, int x_int8, uint32_t cols,
                   float *y, int accumulate)
{
    return products(p, stream, &m, &y, 1, x, x_int8, cols, accumulate);
}

/* y = RMSNorm(x) * weight for n rows of the hidden size; in q8 steps also into scratch.xq. */
static int norm(const step *p, void *stream, const float *x, const float *weight, uint32_t n, float *y)
{
    const qwen35_hparams *hp = &p->model->hp;
    if (p->q8)
        return qwen_gpu_rms_norm_q8(stream, x, weight, n, hp->n_embd, hp->rms_eps, y, p->model->scratch.xq);
    return qwen_gpu_rms_norm(stream, x, weight, n, hp->n_embd, hp->rms_eps, y);
}

/* x += W_out(gated norm(delta rule(conv(W_qkv h)))) for one Gated DeltaNet block. */
static int gdn_mixer(const step *p, void *stream, const qwen35_gpu_layer *L)
{
    const qwen35_gpu_model *model = p->model;
    const qwen35_gpu_scratch *s = &model->scratch;
    const qwen35_gpu_gdn_dims *d = &model->gdn_dims;
    const uint32_t n = p->n, rps = n / p->n_seq;
    const qwen_gpu_matrix *in[] = {&L->wqkv, &L->wgate, &L->wbeta, &L->walpha};
    float *const in_out[] = {s->mix, s->z, s->b, s->a};
    int bad = products(p, stream, in, in_out, 4, s->h, ALSO_INT8, model->hp.n_embd, 0);
    bad |= qwen35_gpu_conv_silu(stream, d, s->seqs, L->slot, p->n_seq, rps, L->conv, s->mix, s->conv_out);
    bad |= qwen35_gpu_gdn_prepare(stream, d, n, s->conv_out, s->b, s->a, L->dt_bias, L->ssm_a, s->beta, s->g);
    bad |= qwen35_gpu_delta_rule(stream, d, s->seqs, L->slot, p->n_seq, rps, s->conv_out, s->g, s->beta, s->core);
    bad |= qwen35_gpu_gated_norm(stream, d, n, s->core, s->z, L->ssm_norm);
    bad |= product(p, stream, &L->wout, s->core, FLOATS, model->hp.gdn_inner, s->x, 1);
    return bad;
}

/* x += W_o(sigmoid(gate) * attention(q, caches)) for one gated full-attention block. */
static int attention_mixer(const step *p, void *stream, const qwen35_gpu_layer *L)
{
    const qwen35_gpu_model *model = p->model;
    const qwen35_gpu_scratch *s = &model->scratch;
    const qwen_gpu_dims *dims = &model->att_dims;
    const uint32_t n = p->n;
    const qwen_gpu_matrix *in[] = {&L->wq, &L->wk, &L->wv};
    float *const in_out[] = {s->q_full, s->k, s->v};
    int bad = products(p, stream, in, in_out, 3, s->h, ALSO_INT8, model->hp.n_embd, 0);
    bad |= qwen35_gpu_attention_prepare(stream, dims, L->slot, model->hp.n_rot, s->rows, n, s->q_full, s->k, s->v,
                                        L->q_norm, L->k_norm, model->weights.inv_freq, s->q);
    bad |= qwen_gpu_attention(stream, dims, L->slot, s->rows, n, s->q, p->splits, s->partials, s->att, NULL);
    bad |= qwen35_gpu_attention_gate(stream, dims, n, s->q_full, s->att);
    bad |= product(p, stream, &L->wo, s->att, FLOATS, dims->n_head * dims->head_dim, s->x, 1);
    return bad;
}

/* Enqueues the whole step on `stream` (called directly or under capture). */
static gufo_status record(void *userdata, void *stream)
{
    const step *p = userdata;
    const qwen35_gpu_model *model = p->model;
    const qwen35_hparams *hp = &model->hp;
    const qwen35_gpu_weights *w = &model->weights;
    const qwen35_gpu_scratch *s = &model->scratch;
    const uint32_t n = p->n, D = hp->n_embd;
    int bad = qwen_gpu_embed(stream, &w->token_embd, s->rows, n, s->x);
    for (uint32_t il = 0; il < hp->n_layer && !bad; il++) {
        const qwen35_gpu_layer *L = &w->layers[il];
        bad |= norm(p, stream, s->x, L->attn_norm, n, s->h);
        bad |= L->recurrent ? gdn_mixer(p, stream, L) : attention_mixer(p, stream, L);
        bad |= norm(p, stream, s->x, L->post_norm, n, s->h);
        const qwen_gpu_matrix *gate_up[] = {&L->ffn_gate, &L->ffn_up};
        float *const gate_up_out[] = {s->gate, s->up};
        bad |= products(p, stream, gate_up, gate_up_out, 2, s->h, ALSO_INT8, D, 0);
        if (p->q8)
            bad |= qwen_gpu_swiglu_q8(stream, s->gate, s->up, n, hp->n_ff, s->xq);
        else
            bad |= qwen_gpu_swiglu(stream, s->gate, s->up, (size_t)n * hp->n_ff);
        bad |= product(p, stream, &L->ffn_down, s->gate, ALSO_INT8, hp->n_ff, s->x, 1);
    }
    if (!bad && p->n_out) {
        /* The output matrix is a matrix-vector product even after a BLAS prefill. */
        step out = *p;
        out.n = p->n_out;
        out.gemm = false;
        out.q8 = model->decode_q8;
        bad |= norm(&out, stream, s->x + (size_t)(n - p->n_out) * D, w->output_norm, p->n_out, s->normed);
        bad |= product(&out, stream, &w->output, s->normed, ALSO_INT8, D, s->logits, 0);
        if (p->pick == QWEN_GPU_PICK_ARGMAX)
            bad |= qwen_gpu_argmax(stream, s->logits, p->n_out, hp->n_vocab, s->tokens);
        else if (p->pick == QWEN_GPU_PICK_SAMPLE)
            bad |= qwen_gpu_sample(stream, s->logits, p->n_out, hp->n_vocab, s->sampling, s->tokens);
    }
    return bad ? qwen35_gpu_failed(p->err, "launching the step's kernels") : GUFO_OK;
}

gufo_status qwen35_gpu_forward(qwen35_gpu_model *model, uint32_t n, uint32_t n_seq, uint32_t n_out,
                               qwen_gpu_pick pick, bool graph, gufo_error *err)
{
    qwen35_gpu_scratch *s = &model->scratch;
    if (n == 0 || n > s->max_rows || n_out > s->max_out || n_out > n || n_seq == 0 || n % n_seq)
        return gufo_error_set(err, GUFO_E_INTERNAL,
                              "qwen35-gpu forward: %u rows of %u sequences / %u outputs do not fit the scratch (%u / %u)",
                              n, n_seq, n_out, s->max_rows, s->max_out);
    step p = {.model = model, .n = n, .n_seq = n_seq, .n_out = n_out, .pick = n_out ? pick : QWEN_GPU_PICK_NONE,
              .err = err};
    p.splits = graph ? QWEN35_GPU_DECODE_SPLITS : qwen_gpu_prefill_splits(model->rows_host, n, s->max_row_splits);
    p.gemm = !graph && model->blas && n >= QWEN35_GPU_GEMM_MIN_ROWS;
    p.q8 = !p.gemm && model->decode_q8;
    if (qwen_gpu_to_device(s->rows, model->rows_host, n * sizeof(qwen_gpu_row), model->stream) ||
        qwen_gpu_to_device(s->seqs, model->seqs_host, n_seq * sizeof(qwen35_gpu_seq), model->stream))
        return qwen35_gpu_failed(err, "copying the step's rows");
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

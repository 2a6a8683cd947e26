/* eg2_forward.c — the EmbeddingGemma 2 text encoder on the CPU.
 *
 * Per layer, as transformers' EmbeddingGemma2EncoderLayer and llama.cpp's
 * gemma-embedding2 graph compute it:
 *   h = rms(x) * attn_norm; q, k, v = h W^T; q, k RMS-normed per head with
 *   their weights, v without; RoPE (NeoX halves, whole head, base per layer
 *   kind); bidirectional softmax attention with scale 1 (the q/k norms make
 *   1/sqrt(d) unnecessary), a sliding layer seeing |i - j| <= swa_radius
 *   (transformers' window: eg2_swa_radius() says why it is not llama.cpp's);
 *   x += rms(att W_o^T) * post_attention_norm;
 *   x += rms(W_down (gelu(h W_gate^T) * h W_up^T)) * post_ffw_norm, h = rms(x) * ffn_norm;
 *   x += rms(W_proj (gelu(x W_inp_gate^T) * ple_l)) * post_norm;   (per-layer embedding)
 *   x *= layer_output_scale.
 * Before the layers: x = token_embd[id] * sqrt(n_embd), and the per-layer
 * inputs ple = rms(per_layer_model_proj x / sqrt(n_embd)) * per_layer_proj_norm,
 * one n_embd_per_layer slice per layer (projection only: this model has no
 * per-layer token table). After them: rms(x) * output_norm, mean over the
 * sequence, output projection.
 *
 * Every product goes through gufo_x_cpu_matmul() with float32 activations
 * (GUFO_X_CPU_EXACT): an embedding is compared by cosine across calls and
 * machines, so the provider keeps the reference's numerics for every type.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eg2_model.h"

float eg2_gelu_tanh(float x)
{
    const float k = 0.7978845608028654f; /* sqrt(2 / pi) */
    return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
}

static gufo_status mm(eg2_model *m, const gufo_x_cpu_matrix *w, const float *x, uint64_t n, float *y,
                      gufo_error *err)
{
    const gufo_x_cpu_matrix *ws[1] = {w};
    float *ys[1] = {y};
    gufo_status st = gufo_x_cpu_matmul(m->pool, ws, 1, x, n, ys, GUFO_X_CPU_EXACT, m->mm_scratch, m->mm_scratch_bytes);
    if (st != GUFO_OK)
        return gufo_error_set(err, st, "matrix product (%llu x %llu, %s) failed", (unsigned long long)w->rows,
                              (unsigned long long)w->cols, gufo_tensor_type_name(w->type));
    return GUFO_OK;
}

/* Three products sharing one input in one call (q/k/v, gate/up). */
static gufo_status mm_n(eg2_model *m, const gufo_x_cpu_matrix *const *ws, size_t n_w, const float *x, uint64_t n,
                        float *const *ys, gufo_error *err)
{
    gufo_status st = gufo_x_cpu_matmul(m->pool, ws, n_w, x, n, ys, GUFO_X_CPU_EXACT, m->mm_scratch, m->mm_scratch_bytes);
    if (st != GUFO_OK)
        return gufo_error_set(err, st, "matrix products (%zu matrices of width %llu) failed", n_w,
                              (unsigned long long)ws[0]->cols);
    return GUFO_OK;
}

static void rms_rows(float *x, size_t rows, size_t n, const float *weight, float eps)
{
    for (size_t r = 0; r < rows; r++)
        gufo_x_cpu_rms_norm(x + r * n, weight, n, eps, x + r * n);
}

/* NeoX rotation of one head: pairs (i, i + d/2), angle pos * base^(-2i/d). */
static void rope_head(float *x, uint32_t d, uint32_t pos, float base)
{
    const uint32_t half = d / 2;
    for (uint32_t i = 0; i < half; i++) {
        double theta = (double)pos * pow((double)base, -2.0 * (double)i / (double)d);
        float c = (float)cos(theta), s = (float)sin(theta);
        float a = x[i], b = x[i + half];
        x[i] = a * c - b * s;
        x[i + half] = b * c + a * s;
    }
}

/* The attention of one layer, as a pool section: task = (row, key/value head). */
typedef struct attn_ctx {
    eg2_model *m;
    const eg2_seq *seqs;
    const uint32_t *seq_of_row, *start_of_seq;
    uint32_t n_head, n_kv, hd, radius;
    bool swa;
    gufo_status st;
} attn_ctx;

static void attn_task(void *p, size_t task, uint32_t thread)
{
    attn_ctx *c = p;
    eg2_model *m = c->m;
    const uint32_t row = (uint32_t)(task / c->n_kv), kvh = (uint32_t)(task % c->n_kv);
    const uint32_t s = c->seq_of_row[row], begin = c->start_of_seq[s], n = c->seqs[s].n;
    const uint32_t pos = row - begin, group = c->n_head / c->n_kv;
    uint32_t lo = 0, hi = n - 1;
    if (c->swa) {
        lo = pos > c->radius ? pos - c->radius : 0;
        hi = pos + c->radius < n - 1 ? pos + c->radius : n - 1;
    }
    const size_t qs = (size_t)c->n_head * c->hd, ks = (size_t)c->n_kv * c->hd;
    uint32_t n_keys = hi - lo + 1;
    gufo_x_cpu_attention_args a = {
        .n_rows = 1, .group = group, .dk = c->hd, .dv = c->hd,
        .q = m->q + (size_t)row * qs + (size_t)kvh * group * c->hd, .q_row_stride = qs,
        .k = m->k + (size_t)(begin + lo) * ks + (size_t)kvh * c->hd,
        .v = m->v + (size_t)(begin + lo) * ks + (size_t)kvh * c->hd,
        .k_stride = ks, .v_stride = ks, .n_keys = &n_keys,
        .out = m->att + (size_t)row * qs + (size_t)kvh * group * c->hd, .out_row_stride = qs,
        .scale = 1.0f,
    };
    gufo_status st = gufo_x_cpu_attention(&a, m->attn_scratch + (size_t)thread * m->attn_scratch_floats);
    if (st != GUFO_OK)
        c->st = st; /* benign race: any failing task's status will do */
}

static gufo_status layer(eg2_model *m, uint32_t il, const eg2_seq *seqs, const uint32_t *seq_of_row,
                         const uint32_t *start_of_seq, uint32_t T, gufo_error *err)
{
    const eg2_hparams *hp = &m->hp;
    const eg2_layer *L = &m->w.layers[il];
    const uint32_t E = hp->n_embd, hd = eg2_head_dim(hp, il), nh = hp->n_head[il], nkv = hp->n_head_kv[il];
    const uint32_t F = hp->n_ff[il], P = hp->n_embd_per_layer;
    const float base = hp->is_swa[il] ? hp->rope_base_swa : hp->rope_base_full;
    gufo_status st;

    /* attention */
    memcpy(m->h, m->x, (size_t)T * E * sizeof(float));
    rms_rows(m->h, T, E, L->attn_norm, hp->eps);
    const gufo_x_cpu_matrix *qkv[3] = {&L->wq, &L->wk, &L->wv};
    float *qkv_out[3] = {m->q, m->k, m->v};
    if ((st = mm_n(m, qkv, 3, m->h, T, qkv_out, err)) != GUFO_OK)
        return st;
    for (uint32_t r = 0; r < T; r++) {
        const uint32_t pos = r - start_of_seq[seq_of_row[r]];
        for (uint32_t h = 0; h < nh; h++) {
            float *q = m->q + ((size_t)r * nh + h) * hd;
            gufo_x_cpu_rms_norm(q, L->q_norm, hd, hp->eps, q);
            rope_head(q, hd, pos, base);
        }
        for (uint32_t h = 0; h < nkv; h++) {
            float *k = m->k + ((size_t)r * nkv + h) * hd, *v = m->v + ((size_t)r * nkv + h) * hd;
            gufo_x_cpu_rms_norm(k, L->k_norm, hd, hp->eps, k);
            rope_head(k, hd, pos, base);
            gufo_x_cpu_rms_norm(v, m->ones, hd, hp->eps, v); /* v_norm has no weight */
        }
    }
    attn_ctx ac = {.m = m, .seqs = seqs, .seq_of_row = seq_of_row, .start_of_seq = start_of_seq, .n_head = nh,
                   .n_kv = nkv, .hd = hd, .radius = hp->swa_radius, .swa = hp->is_swa[il], .st = GUFO_OK};
    gufo_x_pool_run_work(m->pool, attn_task, &ac, (size_t)T * nkv, (uint64_t)T * T * nh * hd * 2);
    if (ac.st != GUFO_OK)
        return gufo_error_set(err, ac.st, "attention of layer %u failed", il);
    if ((st = mm(m, &L->wo, m->att, T, m->o, err)) != GUFO_OK)
        return st;
    rms_rows(m->o, T, E, L->post_attn_norm, hp->eps);
    for (size_t i = 0; i < (size_t)T * E; i++)
        m->x[i] += m->o[i];

    /* feed-forward */
    memcpy(m->h, m->x, (size_t)T * E * sizeof(float));
    rms_rows(m->h, T, E, L->ffn_norm, hp->eps);
    const gufo_x_cpu_matrix *gu[2] = {&L->gate, &L->up};
    float *gu_out[2] = {m->gate, m->up};
    if ((st = mm_n(m, gu, 2, m->h, T, gu_out, err)) != GUFO_OK)
        return st;
    for (size_t i = 0; i < (size_t)T * F; i++)
        m->gate[i] = eg2_gelu_tanh(m->gate[i]) * m->up[i];
    if ((st = mm(m, &L->down, m->gate, T, m->o, err)) != GUFO_OK)
        return st;
    rms_rows(m->o, T, E, L->post_ffn_norm, hp->eps);
    for (size_t i = 0; i < (size_t)T * E; i++)
        m->x[i] += m->o[i];

    /* per-layer embedding */
    if ((st = mm(m, &L->inp_gate, m->x, T, m->pg, err)) != GUFO_OK)
        return st;
    for (uint32_t r = 0; r < T; r++) {
        const float *ple = m->ple + ((size_t)r * hp->n_layer + il) * P;
        float *g = m->pg + (size_t)r * P;
        for (uint32_t i = 0; i < P; i++)
            g[i] = eg2_gelu_tanh(g[i]) * ple[i];
    }
    if ((st = mm(m, &L->proj, m->pg, T, m->o, err)) != GUFO_OK)
        return st;
    rms_rows(m->o, T, E, L->post_norm, hp->eps);
    for (size_t i = 0; i < (size_t)T * E; i++)
        m->x[i] = (m->x[i] + m->o[i]) * L->out_scale;
    return GUFO_OK;
}

gufo_status eg2_forward(eg2_model *m, const eg2_seq *seqs, size_t n_seq, gufo_error *err)
{
    const eg2_hparams *hp = &m->hp;
    const uint32_t E = hp->n_embd, P = hp->n_embd_per_layer, NL = hp->n_layer;
    uint32_t T = 0;
    for (size_t s = 0; s < n_seq; s++) {
        if (seqs[s].n == 0 || seqs[s].n > hp->n_ctx || seqs[s].n > m->group_tokens - T)
            return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "forward group: sequence %zu of %u tokens does not fit",
                                  s, seqs[s].n);
        T += seqs[s].n;
    }
    uint32_t *seq_of_row = malloc((size_t)T * sizeof *seq_of_row), *start_of_seq = malloc((n_seq + 1) * sizeof *start_of_seq);
    if (!seq_of_row || !start_of_seq) {
        free(seq_of_row);
        free(start_of_seq);
        return gufo_error_set(err, GUFO_E_NO_MEMORY, "forward: out of memory for %u rows", T);
    }
    gufo_status st = GUFO_OK;
    const float scale = sqrtf((float)E);
    uint32_t row = 0;
    for (size_t s = 0; s < n_seq && st == GUFO_OK; s++) {
        start_of_seq[s] = row;
        for (uint32_t i = 0; i < seqs[s].n && st == GUFO_OK; i++, row++) {
            seq_of_row[row] = (uint32_t)s;
            float *x = m->x + (size_t)row * E;
            if ((st = gufo_x_cpu_matrix_row(&m->w.tok_embd, (uint64_t)seqs[s].ids[i], x)) != GUFO_OK) {
                gufo_error_set(err, st, "token %d has no row in token_embd.weight", seqs[s].ids[i]);
                break;
            }
            for (uint32_t e = 0; e < E; e++)
                x[e] *= scale;
        }
    }
    /* per-layer inputs: T rows of n_layer slices */
    if (st == GUFO_OK && (st = mm(m, &m->w.per_layer_model_proj, m->x, T, m->ple, err)) == GUFO_OK) {
        const float inv = 1.0f / sqrtf((float)E);
        for (size_t i = 0; i < (size_t)T * NL * P; i++)
            m->ple[i] *= inv;
        rms_rows(m->ple, (size_t)T * NL, P, m->w.per_layer_proj_norm, hp->eps);
    }
    for (uint32_t il = 0; il < NL && st == GUFO_OK; il++)
        st = layer(m, il, seqs, seq_of_row, start_of_seq, T, err);
    if (st == GUFO_OK) {
        rms_rows(m->x, T, E, m->w.output_norm, hp->eps);
        /* mean per sequence (in double: a long input adds thousands of rows), then the projection */
        for (size_t s = 0; s < n_seq; s++) {
            float *mean = m->h + s * E;
            const float *x = m->x + (size_t)start_of_seq[s] * E;
            for (uint32_t e = 0; e < E; e++) {
                double sum = 0.0;
                for (uint32_t r = 0; r < seqs[s].n; r++)
                    sum += x[(size_t)r * E + e];
                mean[e] = (float)(sum / seqs[s].n);
            }
        }
        if ((st = mm(m, &m->w.output, m->h, n_seq, m->o, err)) == GUFO_OK)
            for (size_t s = 0; s < n_seq; s++)
                memcpy(seqs[s].out, m->o + s * hp->n_embd_out, hp->n_embd_out * sizeof(float));
    }
    free(seq_of_row);
    free(start_of_seq);
    return st;
}

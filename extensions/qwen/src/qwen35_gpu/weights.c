/* qwen35_gpu/weights.c — the model's tensors in device memory (model.h).
 *
 * The inventory is the CPU core's (../qwen35/weights.h): it checks every
 * tensor, binds the matrices where the file is mapped and converts the
 * vectors to float32. This file copies each of them to its own budgeted
 * device allocation under "weights" (matrices in their GGUF block format,
 * which ../gpu's kernels decode), so a model that does not fit fails at load
 * naming the budget, then drops the host copies. The MTP block is not
 * uploaded: this provider does not draft (README.md).
 */
#include <stdio.h>
#include <string.h>

#include "../gpu/model_gpu.h"
#include "../qwen35/attention.h"
#include "../qwen35/weights.h"
#include "model.h"

bool qwen35_gpu_supports(const gufo_gguf *gguf, const qwen35_hparams *hp, char *why, size_t why_cap)
{
    if (hp->head_dim % 2 || hp->head_dim > QWEN_GPU_MAX_HEAD_DIM) {
        snprintf(why, why_cap, "attention head size %u: qwen35-gpu runs even head sizes up to %u", hp->head_dim,
                 QWEN_GPU_MAX_HEAD_DIM);
        return false;
    }
    if (hp->gdn_head_dim == 0 || hp->gdn_head_dim % 16 || hp->gdn_head_dim > QWEN35_GPU_MAX_GDN_HEAD) {
        snprintf(why, why_cap,
                 "Gated DeltaNet head size %u: qwen35-gpu runs multiples of 16 up to %u (the delta rule's state "
                 "stays in registers)", hp->gdn_head_dim, QWEN35_GPU_MAX_GDN_HEAD);
        return false;
    }
    if (hp->conv_kernel > QWEN35_GPU_MAX_CONV_KERNEL) {
        snprintf(why, why_cap, "conv kernel %u: qwen35-gpu runs up to %u taps", hp->conv_kernel,
                 QWEN35_GPU_MAX_CONV_KERNEL);
        return false;
    }
    return qwen_gpu_matrix_types_supported(gguf, "qwen35-gpu", why, why_cap);
}

typedef struct uploader {
    gufo_memory *memory;
    qwen35_gpu_weights *w;
    gufo_error *err;
    gufo_status status;
} uploader;

static void *upload(uploader *u, const void *src, size_t bytes)
{
    if (u->status != GUFO_OK)
        return NULL;
    if (u->w->n_blocks == u->w->max_blocks) {
        u->status = gufo_error_set(u->err, GUFO_E_INTERNAL, "qwen35-gpu: more device blocks than counted");
        return NULL;
    }
    void *data = NULL;
    u->status = gufo_memory_alloc(u->memory, GUFO_MEMORY_DEVICE, bytes ? bytes : 1, 256, "weights", &data, u->err);
    if (u->status != GUFO_OK)
        return NULL;
    u->w->blocks[u->w->n_blocks++] = data;
    u->w->device_bytes += bytes;
    u->status = gufo_memory_copy(u->memory, data, GUFO_MEMORY_DEVICE, src, GUFO_MEMORY_HOST, bytes, u->err);
    return u->status == GUFO_OK ? data : NULL;
}

static void upload_matrix(uploader *u, const qwen35_matrix *src, qwen_gpu_matrix *dst, bool layer_matrix)
{
    dst->type = (int)src->type;
    dst->cols = (uint32_t)src->cols;
    dst->rows = (uint32_t)src->rows;
    dst->row_bytes = src->row_bytes;
    dst->data = upload(u, src->data, (size_t)(src->rows * src->row_bytes));
    if (layer_matrix && src->rows * src->cols > u->w->largest_layer_matrix)
        u->w->largest_layer_matrix = src->rows * src->cols;
}

static const float *upload_vector(uploader *u, const float *src, size_t n)
{
    return upload(u, src, n * sizeof(float));
}

gufo_status qwen35_gpu_weights_load(const gufo_gguf *gguf, const qwen35_hparams *hp, gufo_memory *memory,
                                    qwen35_gpu_weights *w, gufo_error *err)
{
    memset(w, 0, sizeof *w);
    qwen35_weights host;
    gufo_status st = qwen35_weights_load(gguf, hp, &host, err);
    if (st != GUFO_OK)
        return st;
    /* embedding, output, output_norm, inv_freq, and per block at most 9 matrices + 6 vectors */
    w->max_blocks = 4 + (size_t)hp->n_layer * 15;
    void *layers = NULL, *blocks = NULL;
    st = gufo_memory_alloc(memory, GUFO_MEMORY_HOST, sizeof(qwen35_gpu_layer) * hp->n_layer, 0, "weights", &layers,
                           err);
    if (st == GUFO_OK)
        st = gufo_memory_alloc(memory, GUFO_MEMORY_HOST, sizeof(void *) * w->max_blocks, 0, "weights", &blocks, err);
    if (st != GUFO_OK) {
        gufo_memory_free(memory, layers);
        qwen35_weights_free(&host);
        return gufo_error_prefix(err, st, "qwen35-gpu weights");
    }
    w->layers = layers;
    w->blocks = blocks;
    memset(w->layers, 0, sizeof(qwen35_gpu_layer) * hp->n_layer);

    uploader u = {.memory = memory, .w = w, .err = err, .status = GUFO_OK};
    upload_matrix(&u, &host.token_embd, &w->token_embd, false);
    if (hp->tied_output)
        w->output = w->token_embd;
    else
        upload_matrix(&u, &host.output, &w->output, false);
    w->output_norm = upload_vector(&u, host.output_norm, hp->n_embd);
    float inv_freq[QWEN35_MAX_HEAD_DIM / 2];
    qwen35_rope_inv_freq(hp->rope_freq_base, hp->n_rot, inv_freq);
    w->inv_freq = upload_vector(&u, inv_freq, hp->n_rot / 2 ? hp->n_rot / 2 : 1);
    const uint32_t D = hp->n_embd, dk = hp->gdn_head_dim, Hv = hp->gdn_v_heads;
    uint32_t n_att = 0, n_gdn = 0;
    for (uint32_t il = 0; il < hp->n_layer && u.status == GUFO_OK; il++) {
        const qwen35_layer *src = &host.layers[il];
        qwen35_gpu_layer *L = &w->layers[il];
        L->recurrent = src->recurrent;
        L->slot = src->recurrent ? n_gdn++ : n_att++;
        L->attn_norm = upload_vector(&u, src->attn_norm, D);
        L->post_norm = upload_vector(&u, src->post_norm, D);
        upload_matrix(&u, &src->ffn_gate, &L->ffn_gate, true);
        upload_matrix(&u, &src->ffn_up, &L->ffn_up, true);
        upload_matrix(&u, &src->ffn_down, &L->ffn_down, true);
        if (src->recurrent) {
            const qwen35_gdn_weights *g = &src->gdn;
            upload_matrix(&u, &g->wqkv, &L->wqkv, true);
            upload_matrix(&u, &g->wgate, &L->wgate, true);
            upload_matrix(&u, &g->wbeta, &L->wbeta, true);
            upload_matrix(&u, &g->walpha, &L->walpha, true);
            upload_matrix(&u, &g->wout, &L->wout, true);
            L->conv = upload_vector(&u, g->conv, (size_t)qwen35_gdn_conv_dim(hp) * hp->conv_kernel);
            L->dt_bias = upload_vector(&u, g->dt_bias, Hv);
            L->ssm_a = upload_vector(&u, g->a, Hv);
            L->ssm_norm = upload_vector(&u, g->norm, dk);
        } else {
            const qwen35_attention_weights *a = &src->att;
            upload_matrix(&u, &a->wq, &L->wq, true);
            upload_matrix(&u, &a->wk, &L->wk, true);
            upload_matrix(&u, &a->wv, &L->wv, true);
            upload_matrix(&u, &a->wo, &L->wo, true);
            L->q_norm = upload_vector(&u, a->q_norm, hp->head_dim);
            L->k_norm = upload_vector(&u, a->k_norm, hp->head_dim);
        }
    }
    qwen35_weights_free(&host);
    if (u.status != GUFO_OK) {
        qwen35_gpu_weights_free(memory, w);
        return gufo_error_prefix(err, u.status, "qwen35-gpu weights");
    }
    return GUFO_OK;
}

void qwen35_gpu_weights_free(gufo_memory *memory, qwen35_gpu_weights *w)
{
    for (size_t i = 0; i < w->n_blocks; i++)
        gufo_memory_free(memory, w->blocks[i]);
    gufo_memory_free(memory, w->blocks);
    gufo_memory_free(memory, w->layers);
    memset(w, 0, sizeof *w);
}

/* qwen35/weights.c — the tensor inventory of llama.cpp's qwen35 layout (weights.h). */
#include "weights.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One walk over the inventory serves both the metadata check (w == NULL)
 * and the load, so the two cannot disagree. */
typedef struct walker {
    const gufo_gguf *gguf;
    qwen35_weights *w; /* NULL: check only */
    char *why;
    size_t cap;
    bool out_of_memory;
} walker;

static bool fail(walker *k, const char *fmt, ...) GUFO_EXT_PRINTF(2, 3);
static bool fail(walker *k, const char *fmt, ...)
{
    if (k->why && k->cap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(k->why, k->cap, fmt, ap);
        va_end(ap);
    }
    return false;
}

/* Finds `name` and checks its shape: [cols] when rows == 0, else [cols, rows]. */
static bool find_shaped(walker *k, const char *name, uint64_t cols, uint64_t rows, bool optional, bool *found,
                        gufo_gguf_tensor_info *info)
{
    *found = false;
    if (gufo_gguf_find_tensor(k->gguf, name, info) != GUFO_OK)
        return optional ? true : fail(k, "missing tensor %s", name);
    *found = true;
    const uint32_t want_dims = rows ? 2 : 1;
    if (info->n_dims == want_dims && info->dims[0] == cols && (rows == 0 || info->dims[1] == rows))
        return true;
    char got[96] = "";
    size_t used = 0;
    for (uint32_t d = 0; d < info->n_dims && used < sizeof got; d++)
        used += (size_t)snprintf(got + used, sizeof got - used, "%s%llu", d ? ", " : "",
                                 (unsigned long long)info->dims[d]);
    if (rows)
        return fail(k, "tensor %s has shape [%s], expected [%llu, %llu]", name, got, (unsigned long long)cols,
                    (unsigned long long)rows);
    return fail(k, "tensor %s has shape [%s], expected [%llu]", name, got, (unsigned long long)cols);
}

static bool bind_data(walker *k, const gufo_gguf_tensor_info *info, const void **data)
{
    gufo_error err = {0};
    if (gufo_gguf_tensor_data(k->gguf, info, data, &err) != GUFO_OK)
        return fail(k, "tensor %s: %s", info->name, err.message[0] ? err.message : "no data (file not mapped)");
    return true;
}

/* A weight matrix [cols (inputs), rows (outputs)] in a type the CPU kernels multiply. */
static bool matrix(walker *k, const char *name, uint64_t cols, uint64_t rows, bool optional, bool *found_out,
                   qwen35_matrix *out)
{
    gufo_gguf_tensor_info info;
    bool found = false;
    if (found_out)
        *found_out = false;
    if (!find_shaped(k, name, cols, rows, optional, &found, &info))
        return false;
    if (!found)
        return true;
    if (found_out)
        *found_out = true;
    if (!gufo_x_cpu_matmul_supports(info.type, GUFO_X_CPU_Q8))
        return fail(k, "tensor %s has type %s, which the qwen35 CPU code cannot multiply", name,
                    gufo_tensor_type_name(info.type));
    const uint64_t row_bytes = gufo_tensor_row_size(info.type, cols);
    if (row_bytes == 0) {
        uint32_t block = 0, bytes = 0;
        gufo_tensor_type_block(info.type, &block, &bytes);
        return fail(k, "tensor %s: rows of %llu elements are not whole %s blocks of %u", name,
                    (unsigned long long)cols, gufo_tensor_type_name(info.type), block);
    }
    if (!k->w)
        return true;
    const void *data = NULL;
    if (!bind_data(k, &info, &data))
        return false;
    *out = (qwen35_matrix){.type = info.type, .data = data, .rows = rows, .cols = cols, .row_bytes = row_bytes};
    return true;
}

/* A float tensor ([n] or [cols, rows]) copied to float32: norms, conv taps, ssm_a, ssm_dt. */
static bool floats(walker *k, const char *name, uint64_t cols, uint64_t rows, bool optional, bool *found_out,
                   const float **out)
{
    gufo_gguf_tensor_info info;
    bool found = false;
    if (found_out)
        *found_out = false;
    if (!find_shaped(k, name, cols, rows, optional, &found, &info))
        return false;
    if (!found)
        return true;
    if (found_out)
        *found_out = true;
    if (info.type != GUFO_TENSOR_F32 && info.type != GUFO_TENSOR_F16 && info.type != GUFO_TENSOR_BF16)
        return fail(k, "tensor %s has type %s; expected f32, f16 or bf16", name, gufo_tensor_type_name(info.type));
    if (!k->w)
        return true;
    const void *data = NULL;
    if (!bind_data(k, &info, &data))
        return false;
    const uint64_t n = cols * (rows ? rows : 1);
    float *copy = malloc((size_t)n * sizeof(float));
    float **owned = realloc(k->w->owned, (k->w->n_owned + 1) * sizeof *owned);
    if (!copy || !owned) {
        free(copy);
        if (owned)
            k->w->owned = owned;
        k->out_of_memory = true;
        return fail(k, "no memory for a copy of tensor %s", name);
    }
    k->w->owned = owned;
    owned[k->w->n_owned++] = copy;
    if (gufo_tensor_dequantize(info.type, data, copy, n) != GUFO_OK)
        return fail(k, "tensor %s could not be converted to f32", name);
    *out = copy;
    return true;
}

#define NAME(buf, il, suffix) (snprintf((buf), sizeof(buf), "blk.%u.%s", (il), (suffix)), (buf))

static bool walk_attention(walker *k, const qwen35_hparams *hp, uint32_t il, qwen35_attention_weights *a)
{
    char n[96];
    const uint64_t D = hp->n_embd, hd = hp->head_dim;
    return matrix(k, NAME(n, il, "attn_q.weight"), D, 2 * hd * hp->n_head, false, NULL, &a->wq) &&
           matrix(k, NAME(n, il, "attn_k.weight"), D, hd * hp->n_head_kv, false, NULL, &a->wk) &&
           matrix(k, NAME(n, il, "attn_v.weight"), D, hd * hp->n_head_kv, false, NULL, &a->wv) &&
           matrix(k, NAME(n, il, "attn_output.weight"), hd * hp->n_head, D, false, NULL, &a->wo) &&
           floats(k, NAME(n, il, "attn_q_norm.weight"), hd, 0, false, NULL, &a->q_norm) &&
           floats(k, NAME(n, il, "attn_k_norm.weight"), hd, 0, false, NULL, &a->k_norm);
}

static bool walk_gdn(walker *k, const qwen35_hparams *hp, uint32_t il, qwen35_gdn_weights *g)
{
    char n[96];
    const uint64_t D = hp->n_embd, Hv = hp->gdn_v_heads, Vd = hp->gdn_inner, conv = qwen35_gdn_conv_dim(hp);
    return matrix(k, NAME(n, il, "attn_qkv.weight"), D, conv, false, NULL, &g->wqkv) &&
           matrix(k, NAME(n, il, "attn_gate.weight"), D, Vd, false, NULL, &g->wgate) &&
           matrix(k, NAME(n, il, "ssm_beta.weight"), D, Hv, false, NULL, &g->wbeta) &&
           matrix(k, NAME(n, il, "ssm_alpha.weight"), D, Hv, false, NULL, &g->walpha) &&
           matrix(k, NAME(n, il, "ssm_out.weight"), Vd, D, false, NULL, &g->wout) &&
           floats(k, NAME(n, il, "ssm_conv1d.weight"), hp->conv_kernel, conv, false, NULL, &g->conv) &&
           floats(k, NAME(n, il, "ssm_dt.bias"), Hv, 0, false, NULL, &g->dt_bias) &&
           floats(k, NAME(n, il, "ssm_a"), Hv, 0, false, NULL, &g->a) &&
           floats(k, NAME(n, il, "ssm_norm.weight"), hp->gdn_head_dim, 0, false, NULL, &g->norm);
}

/* What every block has: the two norms and the SwiGLU FFN. */
static bool walk_common(walker *k, const qwen35_hparams *hp, uint32_t il, qwen35_layer *L)
{
    char n[96];
    const uint64_t D = hp->n_embd, F = hp->n_ff;
    return floats(k, NAME(n, il, "attn_norm.weight"), D, 0, false, NULL, &L->attn_norm) &&
           floats(k, NAME(n, il, "post_attention_norm.weight"), D, 0, false, NULL, &L->post_norm) &&
           matrix(k, NAME(n, il, "ffn_gate.weight"), D, F, false, NULL, &L->ffn_gate) &&
           matrix(k, NAME(n, il, "ffn_up.weight"), D, F, false, NULL, &L->ffn_up) &&
           matrix(k, NAME(n, il, "ffn_down.weight"), F, D, false, NULL, &L->ffn_down);
}

static bool walk_mtp(walker *k, const qwen35_hparams *hp, qwen35_weights *w)
{
    qwen35_mtp_weights *m = &w->mtp;
    const uint32_t il = hp->n_layer;
    const uint64_t D = hp->n_embd, V = hp->n_vocab;
    char n[96];
    m->block.recurrent = false;
    if (!walk_common(k, hp, il, &m->block) || !walk_attention(k, hp, il, &m->block.att) ||
        !matrix(k, NAME(n, il, "nextn.eh_proj.weight"), 2 * D, D, false, NULL, &m->eh_proj) ||
        !floats(k, NAME(n, il, "nextn.enorm.weight"), D, 0, false, NULL, &m->enorm) ||
        !floats(k, NAME(n, il, "nextn.hnorm.weight"), D, 0, false, NULL, &m->hnorm))
        return false;
    bool has_embed = false, has_head = false, has_norm = false;
    if (!matrix(k, NAME(n, il, "nextn.embed_tokens.weight"), D, V, true, &has_embed, &m->embed) ||
        !matrix(k, NAME(n, il, "nextn.shared_head_head.weight"), D, V, true, &has_head, &m->head) ||
        !floats(k, NAME(n, il, "nextn.shared_head_norm.weight"), D, 0, true, &has_norm, &m->head_norm))
        return false;
    if (!has_embed)
        m->embed = w->token_embd;
    if (!has_head)
        m->head = w->output;
    if (!has_norm)
        m->head_norm = w->output_norm;
    return true;
}

static bool walk(walker *k, const qwen35_hparams *hp)
{
    qwen35_weights scratch; /* the check fills nothing, but the walk needs somewhere to point */
    memset(&scratch, 0, sizeof scratch);
    qwen35_weights *w = k->w ? k->w : &scratch;
    const uint64_t D = hp->n_embd, V = hp->n_vocab;
    bool has_output = false;
    if (!matrix(k, "token_embd.weight", D, V, false, NULL, &w->token_embd) ||
        !floats(k, "output_norm.weight", D, 0, false, NULL, &w->output_norm) ||
        !matrix(k, "output.weight", D, V, true, &has_output, &w->output))
        return false;
    if (!has_output)
        w->output = w->token_embd;
    gufo_gguf_tensor_info probe;
    w->mtp_only = hp->n_nextn > 0 && gufo_gguf_find_tensor(k->gguf, "blk.0.attn_norm.weight", &probe) != GUFO_OK;
    for (uint32_t il = 0; !w->mtp_only && il < hp->n_layer; il++) {
        qwen35_layer one, *L = k->w ? &w->layers[il] : &one;
        memset(L, 0, sizeof *L);
        L->recurrent = hp->recurrent[il];
        if (!walk_common(k, hp, il, L))
            return false;
        if (L->recurrent ? !walk_gdn(k, hp, il, &L->gdn) : !walk_attention(k, hp, il, &L->att))
            return false;
    }
    w->has_mtp = hp->n_nextn > 0;
    return !w->has_mtp || walk_mtp(k, hp, w);
}

bool qwen35_weights_check(const gufo_gguf *gguf, const qwen35_hparams *hp, char *why, size_t why_cap)
{
    walker k = {.gguf = gguf, .w = NULL, .why = why, .cap = why_cap};
    return walk(&k, hp);
}

gufo_status qwen35_weights_load(const gufo_gguf *gguf, const qwen35_hparams *hp, qwen35_weights *w, gufo_error *err)
{
    memset(w, 0, sizeof *w);
    w->layers = calloc(hp->n_layer, sizeof *w->layers);
    if (!w->layers)
        return gufo_error_set(err, GUFO_E_NO_MEMORY, "qwen35: no memory for %u layers", hp->n_layer);
    char why[256] = "";
    walker k = {.gguf = gguf, .w = w, .why = why, .cap = sizeof why};
    if (!walk(&k, hp)) {
        qwen35_weights_free(w);
        return gufo_error_set(err, k.out_of_memory ? GUFO_E_NO_MEMORY : GUFO_E_FORMAT, "%s", why);
    }
    return GUFO_OK;
}

void qwen35_weights_free(qwen35_weights *w)
{
    for (size_t i = 0; i < w->n_owned; i++)
        free(w->owned[i]);
    free(w->owned);
    free(w->layers);
    memset(w, 0, sizeof *w);
}

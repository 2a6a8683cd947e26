/* eg2_weights.c — one table of expected tensors serves the check and the load. */
#include "eg2_weights.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { EG2_MATRIX, EG2_VECTOR, EG2_SCALAR } eg2_kind;

/* One expected tensor: its name, shape and where the loader puts it. */
typedef struct eg2_slot {
    char name[64];
    eg2_kind kind;
    uint64_t cols, rows;          /* rows only for matrices */
    gufo_x_cpu_matrix *matrix;    /* EG2_MATRIX */
    const float **vector;         /* EG2_VECTOR */
    float *scalar;                /* EG2_SCALAR */
} eg2_slot;

static const char *const eg2_block_suffixes[] = {
    "attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "attn_q_norm", "attn_k_norm",
    "post_attention_norm", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down", "post_ffw_norm",
    "inp_gate", "proj", "post_norm", "layer_output_scale",
};
#define EG2_BLOCK_TENSORS (sizeof eg2_block_suffixes / sizeof eg2_block_suffixes[0])
#define EG2_TOP_TENSORS 5u

bool eg2_matrix_type_supported(gufo_tensor_type type)
{
    return gufo_x_cpu_matmul_supports(type, GUFO_X_CPU_EXACT);
}

static bool vector_type_supported(gufo_tensor_type type)
{
    return type == GUFO_TENSOR_F32 || type == GUFO_TENSOR_F16 || type == GUFO_TENSOR_BF16;
}

/* Fills `slots` (EG2_TOP_TENSORS + n_layer * EG2_BLOCK_TENSORS of them) in
 * file-name order; `w` may be NULL for a check without a destination. */
static size_t eg2_inventory(const eg2_hparams *hp, uint64_t n_vocab, eg2_weights *w, eg2_slot *slots)
{
    size_t n = 0;
#define SLOT(k, c, r, m, v, s, ...)                                                                                 \
    do {                                                                                                            \
        eg2_slot *slot_ = &slots[n++];                                                                              \
        snprintf(slot_->name, sizeof slot_->name, __VA_ARGS__);                                                     \
        slot_->kind = (k);                                                                                          \
        slot_->cols = (c);                                                                                          \
        slot_->rows = (r);                                                                                          \
        slot_->matrix = (m);                                                                                        \
        slot_->vector = (v);                                                                                        \
        slot_->scalar = (s);                                                                                        \
    } while (0)
    const uint64_t E = hp->n_embd, P = hp->n_embd_per_layer;
    SLOT(EG2_MATRIX, E, n_vocab, w ? &w->tok_embd : NULL, NULL, NULL, "token_embd.weight");
    SLOT(EG2_MATRIX, E, P * hp->n_layer, w ? &w->per_layer_model_proj : NULL, NULL, NULL,
         "per_layer_model_proj.weight");
    SLOT(EG2_VECTOR, P, 0, NULL, w ? &w->per_layer_proj_norm : NULL, NULL, "per_layer_proj_norm.weight");
    SLOT(EG2_VECTOR, E, 0, NULL, w ? &w->output_norm : NULL, NULL, "output_norm.weight");
    SLOT(EG2_MATRIX, E, hp->n_embd_out, w ? &w->output : NULL, NULL, NULL, "output.weight");
    for (uint32_t il = 0; il < hp->n_layer; il++) {
        eg2_layer *L = w ? &w->layers[il] : NULL;
        const uint64_t hd = eg2_head_dim(hp, il), q = hd * hp->n_head[il], kv = hd * hp->n_head_kv[il];
        const uint64_t F = hp->n_ff[il];
#define M(field) (L ? &L->field : NULL)
#define V(field) (L ? &L->field : NULL)
        SLOT(EG2_VECTOR, E, 0, NULL, V(attn_norm), NULL, "blk.%u.attn_norm.weight", il);
        SLOT(EG2_MATRIX, E, q, M(wq), NULL, NULL, "blk.%u.attn_q.weight", il);
        SLOT(EG2_MATRIX, E, kv, M(wk), NULL, NULL, "blk.%u.attn_k.weight", il);
        SLOT(EG2_MATRIX, E, kv, M(wv), NULL, NULL, "blk.%u.attn_v.weight", il);
        SLOT(EG2_MATRIX, q, E, M(wo), NULL, NULL, "blk.%u.attn_output.weight", il);
        SLOT(EG2_VECTOR, hd, 0, NULL, V(q_norm), NULL, "blk.%u.attn_q_norm.weight", il);
        SLOT(EG2_VECTOR, hd, 0, NULL, V(k_norm), NULL, "blk.%u.attn_k_norm.weight", il);
        SLOT(EG2_VECTOR, E, 0, NULL, V(post_attn_norm), NULL, "blk.%u.post_attention_norm.weight", il);
        SLOT(EG2_VECTOR, E, 0, NULL, V(ffn_norm), NULL, "blk.%u.ffn_norm.weight", il);
        SLOT(EG2_MATRIX, E, F, M(gate), NULL, NULL, "blk.%u.ffn_gate.weight", il);
        SLOT(EG2_MATRIX, E, F, M(up), NULL, NULL, "blk.%u.ffn_up.weight", il);
        SLOT(EG2_MATRIX, F, E, M(down), NULL, NULL, "blk.%u.ffn_down.weight", il);
        SLOT(EG2_VECTOR, E, 0, NULL, V(post_ffn_norm), NULL, "blk.%u.post_ffw_norm.weight", il);
        SLOT(EG2_MATRIX, E, P, M(inp_gate), NULL, NULL, "blk.%u.inp_gate.weight", il);
        SLOT(EG2_MATRIX, P, E, M(proj), NULL, NULL, "blk.%u.proj.weight", il);
        SLOT(EG2_VECTOR, E, 0, NULL, V(post_norm), NULL, "blk.%u.post_norm.weight", il);
        SLOT(EG2_SCALAR, 1, 0, NULL, NULL, L ? &L->out_scale : NULL, "blk.%u.layer_output_scale.weight", il);
#undef M
#undef V
    }
#undef SLOT
    return n;
}

/* Whether `name` is one of the inventory's names (without building it). */
static bool eg2_expected_name(const char *name, uint32_t n_layer)
{
    static const char *const top[EG2_TOP_TENSORS] = {"token_embd.weight", "per_layer_model_proj.weight",
                                                     "per_layer_proj_norm.weight", "output_norm.weight",
                                                     "output.weight"};
    for (size_t i = 0; i < EG2_TOP_TENSORS; i++)
        if (!strcmp(name, top[i]))
            return true;
    unsigned il = 0;
    int used = 0;
    if (sscanf(name, "blk.%u.%n", &il, &used) != 1 || used == 0 || il >= n_layer)
        return false;
    char canonical[64];
    snprintf(canonical, sizeof canonical, "blk.%u.", il);
    if (strncmp(name, canonical, strlen(canonical)) != 0) /* "blk.01." is not block 1 */
        return false;
    const char *rest = name + used;
    for (size_t t = 0; t < EG2_BLOCK_TENSORS; t++) {
        size_t len = strlen(eg2_block_suffixes[t]);
        if (!strncmp(rest, eg2_block_suffixes[t], len) && !strcmp(rest + len, ".weight"))
            return true;
    }
    return false;
}

static void shape_text(const gufo_gguf_tensor_info *info, char *out, size_t cap)
{
    size_t used = 0;
    out[0] = 0;
    for (uint32_t d = 0; d < info->n_dims && used < cap; d++)
        used += (size_t)snprintf(out + used, cap - used, "%s%llu", d ? ", " : "", (unsigned long long)info->dims[d]);
}

static bool check_slot(const gufo_gguf *gguf, const eg2_slot *s, gufo_gguf_tensor_info *info, char *why, size_t cap)
{
    if (gufo_gguf_find_tensor(gguf, s->name, info) != GUFO_OK)
        return eg2_fail(why, cap, "missing tensor %s", s->name);
    char got[96];
    shape_text(info, got, sizeof got);
    if (s->kind == EG2_MATRIX) {
        if (info->n_dims != 2 || info->dims[0] != s->cols || info->dims[1] != s->rows)
            return eg2_fail(why, cap, "tensor %s has shape [%s], expected [%llu, %llu]", s->name, got,
                            (unsigned long long)s->cols, (unsigned long long)s->rows);
        if (!eg2_matrix_type_supported(info->type))
            return eg2_fail(why, cap, "tensor %s has type %s, which embedding-gemma2-cpu cannot multiply", s->name,
                            gufo_tensor_type_name(info->type));
        if (gufo_tensor_row_size(info->type, s->cols) == 0)
            return eg2_fail(why, cap, "tensor %s: rows of %llu elements are not whole %s blocks", s->name,
                            (unsigned long long)s->cols, gufo_tensor_type_name(info->type));
        return true;
    }
    if (info->n_elements != s->cols || (info->n_dims != 1 && !(s->kind == EG2_SCALAR)))
        return eg2_fail(why, cap, "tensor %s has shape [%s], expected [%llu]", s->name, got,
                        (unsigned long long)s->cols);
    if (!vector_type_supported(info->type))
        return eg2_fail(why, cap, "tensor %s has type %s; norm weights must be f32, f16 or bf16", s->name,
                        gufo_tensor_type_name(info->type));
    return true;
}

/* token_embd's rows are the vocabulary size; everything else follows from hp. */
static bool eg2_vocab_rows(const gufo_gguf *gguf, uint64_t *n_vocab, char *why, size_t cap)
{
    gufo_gguf_tensor_info info;
    if (gufo_gguf_find_tensor(gguf, "token_embd.weight", &info) != GUFO_OK)
        return eg2_fail(why, cap, "missing tensor token_embd.weight");
    if (info.n_dims != 2 || info.dims[1] == 0 || info.dims[1] > INT32_MAX) {
        char got[96];
        shape_text(&info, got, sizeof got);
        return eg2_fail(why, cap, "tensor token_embd.weight has shape [%s], expected [n_embd, n_vocab]", got);
    }
    *n_vocab = info.dims[1];
    return true;
}

static size_t eg2_slot_count(const eg2_hparams *hp)
{
    return EG2_TOP_TENSORS + (size_t)hp->n_layer * EG2_BLOCK_TENSORS;
}

static bool eg2_check_all(const gufo_gguf *gguf, const eg2_hparams *hp, eg2_weights *w, eg2_slot *slots,
                          char *why, size_t cap)
{
    uint64_t n_vocab = 0;
    if (!eg2_vocab_rows(gguf, &n_vocab, why, cap))
        return false;
    size_t n = eg2_inventory(hp, n_vocab, w, slots);
    gufo_gguf_tensor_info info;
    for (size_t i = 0; i < n; i++)
        if (!check_slot(gguf, &slots[i], &info, why, cap))
            return false;
    uint64_t count = gufo_gguf_tensor_count(gguf);
    for (uint64_t i = 0; i < count; i++) {
        if (gufo_gguf_tensor_at(gguf, i, &info) != GUFO_OK)
            return eg2_fail(why, cap, "tensor %llu of the file does not read", (unsigned long long)i);
        if (!eg2_expected_name(info.name, hp->n_layer))
            return eg2_fail(why, cap, "tensor %s is not part of the gemma-embedding2 text graph embedding-gemma2-cpu "
                            "runs (a per-layer token table, rope_freqs, Dense heads and vision/audio towers are "
                            "not served)", info.name);
    }
    return true;
}

bool eg2_weights_check(const gufo_gguf *gguf, const eg2_hparams *hp, char *why, size_t cap)
{
    eg2_slot *slots = calloc(eg2_slot_count(hp), sizeof *slots);
    if (!slots)
        return eg2_fail(why, cap, "out of memory checking %zu tensors", eg2_slot_count(hp));
    bool ok = eg2_check_all(gguf, hp, NULL, slots, why, cap);
    free(slots);
    return ok;
}

/* Float vectors, then the layer table, in one allocation. */
static size_t eg2_vector_floats(const eg2_slot *slots, size_t n)
{
    size_t floats = 0;
    for (size_t i = 0; i < n; i++)
        if (slots[i].kind == EG2_VECTOR)
            floats += (size_t)slots[i].cols;
    return floats;
}

gufo_status eg2_weights_load(const gufo_gguf *gguf, const eg2_hparams *hp, gufo_memory *memory, eg2_weights *w,
                             gufo_error *err)
{
    memset(w, 0, sizeof *w);
    size_t n_slots = eg2_slot_count(hp);
    eg2_slot *slots = calloc(n_slots, sizeof *slots);
    if (!slots)
        return gufo_error_set(err, GUFO_E_NO_MEMORY, "out of memory listing %zu tensors", n_slots);
    char why[GUFO_ERROR_MESSAGE_MAX];
    gufo_status st = GUFO_OK;
    /* First pass without destinations, to size the block. */
    if (!eg2_check_all(gguf, hp, NULL, slots, why, sizeof why)) {
        st = gufo_error_set(err, GUFO_E_FORMAT, "%s", why);
        goto done;
    }
    size_t layer_bytes = (size_t)hp->n_layer * sizeof(eg2_layer);
    layer_bytes = (layer_bytes + 63u) & ~(size_t)63u;
    size_t bytes = layer_bytes + eg2_vector_floats(slots, n_slots) * sizeof(float);
    if ((st = gufo_memory_alloc(memory, GUFO_MEMORY_HOST, bytes, 64, "weights", &w->block, err)) != GUFO_OK)
        goto done;
    memset(w->block, 0, bytes);
    w->layers = w->block;
    float *next = (float *)((char *)w->block + layer_bytes);
    if (!eg2_check_all(gguf, hp, w, slots, why, sizeof why)) { /* the same file: cannot fail now, but say so */
        st = gufo_error_set(err, GUFO_E_INTERNAL, "%s", why);
        goto done;
    }
    uint64_t mapped = 0;
    for (size_t i = 0; i < n_slots && st == GUFO_OK; i++) {
        const eg2_slot *s = &slots[i];
        gufo_gguf_tensor_info info;
        const void *data = NULL;
        gufo_gguf_find_tensor(gguf, s->name, &info);
        if ((st = gufo_gguf_tensor_data(gguf, &info, &data, err)) != GUFO_OK)
            break;
        if (s->kind == EG2_MATRIX) {
            *s->matrix = (gufo_x_cpu_matrix){.type = info.type, .data = data, .rows = s->rows, .cols = s->cols,
                                             .row_bytes = gufo_tensor_row_size(info.type, s->cols),
                                             .layout = GUFO_X_CPU_LAYOUT_GGUF};
            mapped += info.size;
        } else if (s->kind == EG2_VECTOR) {
            st = gufo_tensor_dequantize(info.type, data, next, s->cols);
            *s->vector = next;
            next += s->cols;
        } else {
            st = gufo_tensor_dequantize(info.type, data, s->scalar, 1);
        }
        if (st != GUFO_OK)
            gufo_error_set(err, st, "tensor %s (%s) does not convert to float32", s->name,
                           gufo_tensor_type_name(info.type));
    }
    /* The matrices are read from the mapping on every call: they are
     * resident memory of this model, so the budget counts them. */
    if (st == GUFO_OK && (st = gufo_memory_charge(memory, GUFO_MEMORY_HOST, mapped, "weights", err)) == GUFO_OK)
        w->charged = mapped;
done:
    free(slots);
    if (st != GUFO_OK)
        eg2_weights_free(memory, w);
    return st;
}

void eg2_weights_free(gufo_memory *memory, eg2_weights *w)
{
    if (w->charged)
        gufo_memory_uncharge(memory, GUFO_MEMORY_HOST, w->charged, "weights");
    gufo_memory_free(memory, w->block);
    memset(w, 0, sizeof *w);
}

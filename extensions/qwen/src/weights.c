/* weights.c — resolving tensors in the mapping and copying the norms (weights.h). */
#define _DEFAULT_SOURCE /* madvise */
#include "weights.h"

#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static gufo_status find(const gufo_gguf *gguf, const char *name, gufo_gguf_tensor_info *info, gufo_error *err)
{
    gufo_status st = gufo_gguf_find_tensor(gguf, name, info);
    if (st != GUFO_OK)
        return gufo_error_set(err, GUFO_E_FORMAT, "missing tensor %s", name);
    return GUFO_OK;
}

static gufo_status bind_matrix(const gufo_gguf *gguf, const char *name, qwen_matrix *m, uint64_t *total,
                               gufo_error *err)
{
    gufo_gguf_tensor_info info;
    gufo_status st = find(gguf, name, &info, err);
    if (st != GUFO_OK)
        return st;
    const void *data = NULL;
    if ((st = gufo_gguf_tensor_data(gguf, &info, &data, err)) != GUFO_OK)
        return gufo_error_prefix(err, st, "tensor %s", name);
    m->type = info.type;
    m->data = data;
    m->cols = info.dims[0];
    m->rows = info.dims[1];
    m->row_bytes = gufo_tensor_row_size(info.type, info.dims[0]);
    if (m->row_bytes == 0 || m->row_bytes * m->rows != info.size)
        return gufo_error_set(err, GUFO_E_FORMAT, "tensor %s: %llu bytes do not hold %llu rows of %llu %s elements",
                              name, (unsigned long long)info.size, (unsigned long long)m->rows,
                              (unsigned long long)m->cols, gufo_tensor_type_name(info.type));
    *total += info.size;
    return GUFO_OK;
}

/* Converts a norm vector to F32 at `dst` (n elements, already shape-checked). */
static gufo_status copy_vector(const gufo_gguf *gguf, const char *name, float *dst, uint64_t n, gufo_error *err)
{
    gufo_gguf_tensor_info info;
    gufo_status st = find(gguf, name, &info, err);
    if (st != GUFO_OK)
        return st;
    const void *data = NULL;
    if ((st = gufo_gguf_tensor_data(gguf, &info, &data, err)) != GUFO_OK)
        return gufo_error_prefix(err, st, "tensor %s", name);
    if (info.n_elements != n)
        return gufo_error_set(err, GUFO_E_FORMAT, "tensor %s has %llu elements, expected %llu", name,
                              (unsigned long long)info.n_elements, (unsigned long long)n);
    if ((st = gufo_tensor_dequantize(info.type, data, dst, n)) != GUFO_OK)
        return gufo_error_set(err, st, "tensor %s: cannot convert %s to f32", name, gufo_tensor_type_name(info.type));
    return GUFO_OK;
}

static gufo_status bind_layer(const gufo_gguf *gguf, const qwen_hparams *hp, uint32_t il, qwen_layer *layer,
                              float **cursor, uint64_t *total, gufo_error *err)
{
    char name[64];
    gufo_status st = GUFO_OK;
    struct {
        const char *suffix;
        qwen_matrix *m;
    } matrices[] = {
        {"attn_q", &layer->wq},     {"attn_k", &layer->wk},   {"attn_v", &layer->wv}, {"attn_output", &layer->wo},
        {"ffn_gate", &layer->gate}, {"ffn_up", &layer->up}, {"ffn_down", &layer->down},
    };
    for (size_t i = 0; i < sizeof matrices / sizeof matrices[0] && st == GUFO_OK; i++) {
        snprintf(name, sizeof name, "blk.%u.%s.weight", il, matrices[i].suffix);
        st = bind_matrix(gguf, name, matrices[i].m, total, err);
    }
    struct {
        const char *suffix;
        const float **dst;
        uint64_t n;
    } vectors[] = {
        {"attn_norm", &layer->attn_norm, hp->n_embd},
        {"attn_q_norm", &layer->q_norm, hp->head_dim_k},
        {"attn_k_norm", &layer->k_norm, hp->head_dim_k},
        {"ffn_norm", &layer->ffn_norm, hp->n_embd},
    };
    for (size_t i = 0; i < sizeof vectors / sizeof vectors[0] && st == GUFO_OK; i++) {
        snprintf(name, sizeof name, "blk.%u.%s.weight", il, vectors[i].suffix);
        st = copy_vector(gguf, name, *cursor, vectors[i].n, err);
        *vectors[i].dst = *cursor;
        *cursor += vectors[i].n;
    }
    return st;
}

gufo_status qwen_weights_load(const gufo_gguf *gguf, const qwen_hparams *hp, gufo_memory *memory, qwen_weights *w,
                              gufo_error *err)
{
    memset(w, 0, sizeof *w);
    const uint64_t per_layer = 2ull * hp->n_embd + 2ull * hp->head_dim_k;
    const uint64_t n_floats = per_layer * hp->n_layer + hp->n_embd;
    void *layers = NULL, *vectors = NULL;
    gufo_status st = gufo_memory_alloc(memory, GUFO_MEMORY_HOST, sizeof(qwen_layer) * hp->n_layer, 0, "weights",
                                       &layers, err);
    if (st == GUFO_OK)
        st = gufo_memory_alloc(memory, GUFO_MEMORY_HOST, (size_t)n_floats * sizeof(float), 0, "weights", &vectors,
                               err);
    if (st != GUFO_OK) {
        gufo_memory_free(memory, layers);
        return gufo_error_prefix(err, st, "qwen weights");
    }
    w->layers = layers;
    w->vectors = vectors;
    memset(w->layers, 0, sizeof(qwen_layer) * hp->n_layer);

    uint64_t mapped = 0;
    float *cursor = w->vectors;
    st = bind_matrix(gguf, "token_embd.weight", &w->token_embd, &mapped, err);
    if (st == GUFO_OK && !hp->tied_output)
        st = bind_matrix(gguf, "output.weight", &w->output, &mapped, err);
    else
        w->output = w->token_embd;
    if (st == GUFO_OK) {
        st = copy_vector(gguf, "output_norm.weight", cursor, hp->n_embd, err);
        w->output_norm = cursor;
        cursor += hp->n_embd;
    }
    for (uint32_t il = 0; il < hp->n_layer && st == GUFO_OK; il++)
        st = bind_layer(gguf, hp, il, &w->layers[il], &cursor, &mapped, err);
    if (st == GUFO_OK) {
        st = gufo_memory_charge(memory, GUFO_MEMORY_HOST, mapped, "weights", err);
        if (st != GUFO_OK)
            gufo_error_prefix(err, st, "qwen weights: %llu mapped bytes", (unsigned long long)mapped);
        else
            w->charged = mapped;
    }
    if (st != GUFO_OK)
        qwen_weights_free(memory, w);
    return st;
}

/* A packed matrix's rows in the mapping are not read again: give their whole
 * pages back to the kernel (the file stays in the page cache, reclaimable). */
static void release_pages(const qwen_matrix *m)
{
    const long page = sysconf(_SC_PAGESIZE);
    if (page <= 0)
        return;
    const uintptr_t start = (uintptr_t)m->data, end = start + (uintptr_t)(m->rows * m->row_bytes);
    const uintptr_t first = (start + (uintptr_t)page - 1) & ~(uintptr_t)(page - 1), last = end & ~(uintptr_t)(page - 1);
    if (last > first)
        (void)madvise((void *)first, last - first, MADV_DONTNEED);
}

/* The matrices qwen_weights_pack considers, in the order their copies are laid out. */
static size_t packable(qwen_weights *w, const qwen_hparams *hp, qwen_matrix **out)
{
    size_t n = 0;
    for (uint32_t il = 0; il < hp->n_layer; il++) {
        qwen_layer *l = &w->layers[il];
        qwen_matrix *each[] = {&l->wq, &l->wk, &l->wv, &l->wo, &l->gate, &l->up, &l->down};
        for (size_t i = 0; i < sizeof each / sizeof each[0]; i++)
            if (gufo_x_cpu_packed_bytes(each[i]))
                out[n++] = each[i];
    }
    /* token_embd is also the embedding table: its rows are looked up with
     * gufo_x_cpu_matrix_row(), which reads either layout. Tied, output is the
     * same matrix, packed once. */
    if (gufo_x_cpu_packed_bytes(&w->token_embd))
        out[n++] = &w->token_embd;
    if (!hp->tied_output && gufo_x_cpu_packed_bytes(&w->output))
        out[n++] = &w->output;
    return n;
}

gufo_status qwen_weights_pack(qwen_weights *w, const qwen_hparams *hp, gufo_memory *memory, gufo_x_pool *pool,
                              gufo_error *err)
{
    const size_t most = 7ull * hp->n_layer + 2;
    void *lists = NULL;
    gufo_status st = gufo_memory_alloc(memory, GUFO_MEMORY_HOST, most * (sizeof(qwen_matrix *) + sizeof(qwen_matrix)),
                                       0, "scratch", &lists, err);
    if (st != GUFO_OK)
        return gufo_error_prefix(err, st, "qwen weights: packing");
    qwen_matrix *packed = lists, **list = (qwen_matrix **)(void *)(packed + most);
    const size_t n = packable(w, hp, list);
    uint64_t bytes = 0, mapped = 0;
    for (size_t i = 0; i < n; i++) {
        bytes += gufo_x_cpu_packed_bytes(list[i]);
        mapped += list[i]->rows * list[i]->row_bytes;
    }
    /* The copies replace these matrices' pages of the mapping in the budget
     * before they are allocated, so the model's peak is its steady state
     * (about the file), not the mapping and the copies at once. */
    gufo_memory_uncharge(memory, GUFO_MEMORY_HOST, mapped, "weights");
    void *block = NULL;
    if (n && (st = gufo_memory_alloc(memory, GUFO_MEMORY_HOST, (size_t)bytes, 64, "weights", &block, err)) != GUFO_OK)
        gufo_error_prefix(err, st, "qwen weights: %llu bytes of packed Q8_0 matrices", (unsigned long long)bytes);
    for (size_t i = 0, at = 0; st == GUFO_OK && i < n; i++) {
        const uint64_t size = gufo_x_cpu_packed_bytes(list[i]);
        if ((st = gufo_x_cpu_pack(pool, list[i], (uint8_t *)block + at, size, &packed[i])) != GUFO_OK)
            gufo_error_set(err, st, "qwen weights: packing a %s matrix of %llu x %llu",
                           gufo_tensor_type_name(list[i]->type), (unsigned long long)list[i]->rows,
                           (unsigned long long)list[i]->cols);
        at += (size_t)size;
    }
    if (st == GUFO_OK) { /* only now: a failure half-way leaves every matrix in the mapping */
        for (size_t i = 0; i < n; i++) {
            release_pages(list[i]);
            *list[i] = packed[i];
        }
        if (hp->tied_output)
            w->output = w->token_embd;
        w->charged -= mapped;
        w->packed = block;
        w->packed_bytes = bytes;
    } else {
        gufo_memory_free(memory, block);
        /* the mapping is what the model reads again: charged as before (it fitted then) */
        gufo_error tmp;
        (void)gufo_memory_charge(memory, GUFO_MEMORY_HOST, mapped, "weights", &tmp);
    }
    gufo_memory_free(memory, lists);
    return st;
}

void qwen_weights_free(gufo_memory *memory, qwen_weights *w)
{
    gufo_memory_free(memory, w->packed);
    if (w->charged)
        gufo_memory_uncharge(memory, GUFO_MEMORY_HOST, w->charged, "weights");
    gufo_memory_free(memory, w->vectors);
    gufo_memory_free(memory, w->layers);
    memset(w, 0, sizeof *w);
}

/* weights_gpu.c — the model's tensors in device memory (model_gpu.h).
 *
 * Matrices are copied as they are in the file (their GGUF block format) with
 * gufo_x_weights_upload(), one budgeted device allocation each under
 * "weights", so a model that does not fit fails at load naming the tensor and
 * the budget. The small float vectors (every RMSNorm weight, the RoPE
 * frequencies) are converted to float32 on the host and uploaded as one block.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <gufo/ext/experimental/weights.h>

#include "model_gpu.h"

static const gufo_tensor_type k_matrix_types[] = {
    GUFO_TENSOR_F32, GUFO_TENSOR_F16, GUFO_TENSOR_BF16, GUFO_TENSOR_Q8_0, GUFO_TENSOR_Q4_K, GUFO_TENSOR_Q6_K,
};
#define N_MATRIX_TYPES (sizeof k_matrix_types / sizeof k_matrix_types[0])

static bool matrix_type_ok(gufo_tensor_type type)
{
    for (size_t i = 0; i < N_MATRIX_TYPES; i++)
        if (k_matrix_types[i] == type)
            return true;
    return false;
}

bool qwen_gpu_supports(const gufo_gguf *gguf, const qwen_hparams *hp, char *why, size_t why_cap)
{
    if (hp->head_dim_k != hp->head_dim_v) {
        snprintf(why, why_cap, "key length %u differs from value length %u, which qwen-gpu's attention cannot run",
                 hp->head_dim_k, hp->head_dim_v);
        return false;
    }
    if (hp->head_dim_k % 2 || hp->head_dim_k > QWEN_GPU_MAX_HEAD_DIM) {
        snprintf(why, why_cap, "head size %u: qwen-gpu runs even head sizes up to %u", hp->head_dim_k,
                 QWEN_GPU_MAX_HEAD_DIM);
        return false;
    }
    return qwen_gpu_matrix_types_supported(gguf, "qwen-gpu", why, why_cap);
}

bool qwen_gpu_matrix_types_supported(const gufo_gguf *gguf, const char *provider, char *why, size_t why_cap)
{
    const uint64_t n = gufo_gguf_tensor_count(gguf);
    for (uint64_t i = 0; i < n; i++) {
        gufo_gguf_tensor_info info;
        if (gufo_gguf_tensor_at(gguf, i, &info) != GUFO_OK || info.n_dims < 2)
            continue; /* vectors are converted to float32 at load, whatever their type */
        if (!matrix_type_ok(info.type)) {
            snprintf(why, why_cap,
                     "tensor %s has type %s, which %s cannot run (it runs f32, f16, bf16, q8_0, q4_K, q6_K)",
                     info.name, gufo_tensor_type_name(info.type), provider);
            return false;
        }
    }
    return true;
}

/* blocks was sized for every tensor at the start, so this cannot overflow. */
static void keep_block(qwen_gpu_weights *w, void *block)
{
    w->blocks[w->n_blocks++] = block;
}

static gufo_status upload_matrix(const gufo_gguf *gguf, gufo_memory *memory, qwen_gpu_weights *w, const char *name,
                                 qwen_gpu_matrix *m, gufo_error *err)
{
    void *data = NULL;
    gufo_gguf_tensor_info info;
    gufo_status st = gufo_x_weights_upload(memory, GUFO_MEMORY_DEVICE, gguf, name, k_matrix_types, N_MATRIX_TYPES,
                                           NULL, 0, &data, &info, err);
    if (st != GUFO_OK)
        return st;
    keep_block(w, data);
    m->type = (int)info.type;
    m->data = data;
    m->cols = (uint32_t)info.dims[0];
    m->rows = (uint32_t)info.dims[1];
    m->row_bytes = gufo_tensor_row_size(info.type, info.dims[0]);
    w->device_bytes += info.size;
    return GUFO_OK;
}

/* Converts vector `name` (n elements) to float32 at dst (host). */
static gufo_status read_vector(const gufo_gguf *gguf, const char *name, float *dst, uint64_t n, gufo_error *err)
{
    gufo_gguf_tensor_info info;
    if (gufo_gguf_find_tensor(gguf, name, &info) != GUFO_OK)
        return gufo_error_set(err, GUFO_E_FORMAT, "missing tensor %s", name);
    if (info.n_elements != n)
        return gufo_error_set(err, GUFO_E_FORMAT, "tensor %s has %llu elements, expected %llu", name,
                              (unsigned long long)info.n_elements, (unsigned long long)n);
    const void *data = NULL;
    gufo_status st = gufo_gguf_tensor_data(gguf, &info, &data, err);
    if (st != GUFO_OK)
        return gufo_error_prefix(err, st, "tensor %s", name);
    if ((st = gufo_tensor_dequantize(info.type, data, dst, n)) != GUFO_OK)
        return gufo_error_set(err, st, "tensor %s: cannot convert %s to f32", name, gufo_tensor_type_name(info.type));
    return GUFO_OK;
}

gufo_status qwen_gpu_weights_load(const gufo_gguf *gguf, const qwen_hparams *hp, gufo_memory *memory,
                                  qwen_gpu_weights *w, gufo_error *err)
{
    memset(w, 0, sizeof *w);
    const uint32_t D = hp->n_embd, dk = hp->head_dim_k;
    const uint64_t per_layer = 2ull * D + 2ull * dk;
    const uint64_t n_floats = per_layer * hp->n_layer + D + dk / 2;
    const size_t max_blocks = (size_t)hp->n_layer * 7 + 3;
    void *layers = NULL, *blocks = NULL, *host_vectors = NULL, *device_vectors = NULL;
    gufo_status st = gufo_memory_alloc(memory, GUFO_MEMORY_HOST, sizeof(qwen_gpu_layer) * hp->n_layer, 0, "weights",
                                       &layers, err);
    if (st == GUFO_OK)
        st = gufo_memory_alloc(memory, GUFO_MEMORY_HOST, sizeof(void *) * max_blocks, 0, "weights", &blocks, err);
    if (st != GUFO_OK) {
        gufo_memory_free(memory, layers);
        return gufo_error_prefix(err, st, "qwen-gpu weights");
    }
    w->layers = layers;
    w->blocks = blocks;
    memset(w->layers, 0, sizeof(qwen_gpu_layer) * hp->n_layer);

    /* Vectors: one host block converted here, then one device block. */
    st = gufo_memory_alloc(memory, GUFO_MEMORY_HOST, (size_t)n_floats * sizeof(float), 0, "scratch", &host_vectors,
                           err);
    if (st == GUFO_OK)
        st = gufo_memory_alloc(memory, GUFO_MEMORY_DEVICE, (size_t)n_floats * sizeof(float), 0, "weights",
                               &device_vectors, err);
    if (st == GUFO_OK)
        keep_block(w, device_vectors);
    float *host = host_vectors;
    const float *device = device_vectors;
    size_t offset = 0;
    char name[64];
    if (st == GUFO_OK) {
        st = read_vector(gguf, "output_norm.weight", host + offset, D, err);
        w->output_norm = device + offset;
        offset += D;
    }
    for (uint32_t il = 0; il < hp->n_layer && st == GUFO_OK; il++) {
        qwen_gpu_layer *L = &w->layers[il];
        struct {
            const char *suffix;
            const float **dst;
            uint32_t n;
        } vectors[] = {
            {"attn_norm", &L->attn_norm, D},
            {"attn_q_norm", &L->q_norm, dk},
            {"attn_k_norm", &L->k_norm, dk},
            {"ffn_norm", &L->ffn_norm, D},
        };
        for (size_t i = 0; i < sizeof vectors / sizeof vectors[0] && st == GUFO_OK; i++) {
            snprintf(name, sizeof name, "blk.%u.%s.weight", il, vectors[i].suffix);
            st = read_vector(gguf, name, host + offset, vectors[i].n, err);
            *vectors[i].dst = device + offset;
            offset += vectors[i].n;
        }
    }
    if (st == GUFO_OK) {
        /* transformers computes base ** (2i / d) in float32 and inverts it (as forward_cpu.c does). */
        for (uint32_t i = 0; i < dk / 2; i++)
            host[offset + i] = 1.0f / powf(hp->rope_freq_base, (float)(2 * i) / (float)dk);
        w->inv_freq = device + offset;
        st = gufo_memory_copy(memory, device_vectors, GUFO_MEMORY_DEVICE, host_vectors, GUFO_MEMORY_HOST,
                              (size_t)n_floats * sizeof(float), err);
        w->device_bytes += n_floats * sizeof(float);
    }
    gufo_memory_free(memory, host_vectors);

    if (st == GUFO_OK)
        st = upload_matrix(gguf, memory, w, "token_embd.weight", &w->token_embd, err);
    if (st == GUFO_OK) {
        if (hp->tied_output)
            w->output = w->token_embd;
        else
            st = upload_matrix(gguf, memory, w, "output.weight", &w->output, err);
    }
    for (uint32_t il = 0; il < hp->n_layer && st == GUFO_OK; il++) {
        qwen_gpu_layer *L = &w->layers[il];
        struct {
            const char *suffix;
            qwen_gpu_matrix *m;
        } matrices[] = {
            {"attn_q", &L->wq},     {"attn_k", &L->wk}, {"attn_v", &L->wv},     {"attn_output", &L->wo},
            {"ffn_gate", &L->gate}, {"ffn_up", &L->up}, {"ffn_down", &L->down},
        };
        for (size_t i = 0; i < sizeof matrices / sizeof matrices[0] && st == GUFO_OK; i++) {
            snprintf(name, sizeof name, "blk.%u.%s.weight", il, matrices[i].suffix);
            st = upload_matrix(gguf, memory, w, name, matrices[i].m, err);
        }
    }
    if (st != GUFO_OK) {
        qwen_gpu_weights_free(memory, w);
        return gufo_error_prefix(err, st, "qwen-gpu weights");
    }
    return GUFO_OK;
}

void qwen_gpu_weights_free(gufo_memory *memory, qwen_gpu_weights *w)
{
    for (size_t i = 0; i < w->n_blocks; i++)
        gufo_memory_free(memory, w->blocks[i]);
    gufo_memory_free(memory, w->blocks);
    gufo_memory_free(memory, w->layers);
    memset(w, 0, sizeof *w);
}
